import { writeFileSync } from "node:fs";
import { InvalidTuningInputError } from "@cosmos-feed/changefeed/tuning";
import { CliInputError } from "./leases.js";
import {
  checkTuneModeOptions,
  formatTune,
  type PngOutcome,
  parseSweep,
  pngPathFor,
  renderPng,
  runSweep,
  sweepSvg,
  tuneReport,
  tuningInputFromOptions,
} from "./tune.js";
import { type MeasureCliOptions, runTuneMeasure } from "./tune-measure.js";

/** The options of `cosmos-feed tune` (commander's names): the scenario's, the sweep's and the measurement's. */
export interface TuneCommandOptions extends MeasureCliOptions {
  measure?: boolean;
  sweep?: string;
  /** With --sweep: the SVG chart's file. */
  svg: string;
  /** With --sweep: the PNG's file, or false for --no-png (default: the SVG's name with .png). */
  png?: string | boolean;
  json?: boolean;
}

/**
 * `cosmos-feed tune`: the model's report for the options, or with --sweep the sweep's table and chart (SVG, and PNG
 * unless --no-png), or with --measure a measurement (tune-measure.ts). `given(name)` says whether an option was on
 * the command line (options of the other mode are refused). Bad input: one line, exit 1.
 */
export async function runTune(opts: TuneCommandOptions, given: (name: string) => boolean): Promise<void> {
  try {
    checkTuneModeOptions(opts.measure === true, given);
    if (opts.measure) {
      await runTuneMeasure(opts);
      return;
    }
    const input = tuningInputFromOptions(opts);
    if (opts.sweep) {
      const sweep = parseSweep(opts.sweep);
      const points = runSweep(input, sweep);
      const svg = sweepSvg(sweep, points);
      writeFileSync(opts.svg, svg);
      const png: PngOutcome | undefined =
        opts.png === false
          ? undefined
          : renderPng(svg, typeof opts.png === "string" ? opts.png : pngPathFor(opts.svg), writeFileSync);
      if (opts.json) console.log(JSON.stringify({ sweep: sweep.name, points, svg: opts.svg, png }, null, 2));
      else {
        console.log(`${sweep.name} (ms)   failover max (s)   lease RU/s ours   lease RU/s .NET`);
        for (const p of points) {
          console.log(
            p.skipped
              ? `${String(p.value).padStart(8)}   skipped: ${p.skipped}`
              : `${String(p.value).padStart(8)}   ${(p.failoverMaxMs / 1000).toFixed(0).padStart(16)}   ${p.oursLeaseRuPerSecond.toFixed(2).padStart(15)}   ${p.dotnetLeaseRuPerSecond.toFixed(2).padStart(15)}`,
          );
        }
        console.log(`chart: ${opts.svg}`);
        if (png) console.log("written" in png ? `chart: ${png.written}` : png.skipped);
      }
      return;
    }
    const result = tuneReport(input);
    console.log(opts.json ? JSON.stringify(result, null, 2) : formatTune(result));
  } catch (e) {
    if (e instanceof CliInputError || e instanceof InvalidTuningInputError) {
      console.error(`cosmos-feed tune: ${e.message}`);
      process.exit(1);
    }
    throw e;
  }
}
