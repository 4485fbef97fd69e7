import {
  ChangeFeedDefaults,
  type ChangeFeedProcessorOptions,
  InvalidProcessorOptionsError,
} from "@cosmos-feed/changefeed";
import { resolveOptions } from "@cosmos-feed/changefeed/options";
import {
  InvalidTuningInputError,
  type TuningInput,
  validateTuningInput,
} from "@cosmos-feed/changefeed/tuning";
import { CliInputError } from "../inputError.js";
import { HOUR, MeasureDefaults } from "./defaults.js";

/** What to measure: a scenario, how much faster than real time it runs, and for how long. */
export interface MeasureRequest {
  /** The scenario, in scenario (unscaled) milliseconds. */
  scenario: TuningInput;
  /** Every interval is divided by this (1–1000): the scenario runs this many times faster than real time. */
  scale: number;
  /** The measuring window, wall-clock ms (500 ms – 24 h). */
  windowMs: number;
}

/** The scenario's intervals as the processors run them (scenario ÷ scale, whole ms; the processor's option names). */
export interface ScaledIntervals {
  /** How often a host renews the leases it owns (ms). */
  leaseRenewInterval: number;
  /** How often a host looks for leases to take (ms). */
  leaseAcquireInterval: number;
  /** How long a lease not renewed stays its owner's (ms). */
  leaseExpirationInterval: number;
  /** How long before its expiry a host stops trusting a lease it could not renew (ms). */
  leaseSafetyMargin: number;
  /** The wait after a change feed read that found nothing (ms). */
  feedPollDelay: number;
  /** How often a host reads the leases it owns to notice one taken from it (ms). */
  leaseWatchInterval: number;
  /** The longest a handled batch's checkpoint is held back to be coalesced (ms). */
  maxCheckpointDelay: number;
}

/** A {@link MeasureRequest} checked and scaled: what `measureScenario` runs. */
export interface CheckedMeasureRequest {
  /** The scenario the model is computed for: the scaled intervals × scale (what the processors really run). */
  scenario: Required<TuningInput>;
  /** The intervals the processors run (scenario ÷ scale). */
  scaled: ScaledIntervals;
  /** How many times faster than real time the scenario runs (1–1000). */
  scale: number;
  /** The measuring window, wall-clock ms. */
  windowMs: number;
}

/**
 * Refuses what cannot be measured, before anything starts, and scales the scenario's intervals (÷ `scale`, whole
 * ms). Throws CliInputError (one line naming the option) for a scale outside 1–1000, a window outside 500 ms–24 h,
 * a scenario the model or the processor refuses, more than MeasureDefaults.maxHosts hosts or maxLeases leases, or a
 * writer faster than MeasureDefaults.maxWallWritesPerSecond.
 */
export function checkMeasureRequest(req: MeasureRequest): CheckedMeasureRequest {
  const { scale, windowMs } = req;
  if (!Number.isFinite(scale) || scale < 1 || scale > 1_000)
    throw new CliInputError(`--scale is a number from 1 to 1000; got ${scale}.`);
  if (!Number.isFinite(windowMs) || windowMs < 500 || windowMs > 24 * HOUR)
    throw new CliInputError(`--window is a duration from 500ms to 24h; got ${windowMs} ms.`);
  let scenario: Required<TuningInput>;
  try {
    scenario = validateTuningInput(req.scenario);
  } catch (e) {
    if (e instanceof InvalidTuningInputError) throw new CliInputError(e.message);
    throw e;
  }
  if (scenario.hosts > MeasureDefaults.maxHosts || scenario.leases > MeasureDefaults.maxLeases)
    throw new CliInputError(
      `--measure runs at most ${MeasureDefaults.maxHosts} hosts and ${MeasureDefaults.maxLeases} leases (ranges); got ${scenario.hosts} × ${scenario.leases}.`,
    );
  if (scenario.writesPerSecond * scale > MeasureDefaults.maxWallWritesPerSecond)
    throw new CliInputError(
      `--writes × --scale is the writer's rate per wall-clock second, at most ${MeasureDefaults.maxWallWritesPerSecond}; got ${scenario.writesPerSecond * scale}.`,
    );
  const down = (name: string, ms: number, zeroOk = false): number => {
    if (zeroOk && ms === 0) return 0;
    const v = Math.round(ms / scale);
    if (v < 1) throw new CliInputError(`${name} ÷ --scale is below 1 ms (${ms} ms ÷ ${scale}).`);
    return v;
  };
  const scaled: ScaledIntervals = {
    leaseRenewInterval: down("leaseRenewInterval", scenario.leaseRenewIntervalMs),
    leaseAcquireInterval: down("leaseAcquireInterval", scenario.leaseAcquireIntervalMs),
    leaseExpirationInterval: down("leaseExpirationInterval", scenario.leaseExpirationIntervalMs),
    // The processor's own default, scaled: min(5 s, expiration / 10).
    leaseSafetyMargin: Math.max(
      1,
      Math.round(
        Math.min(ChangeFeedDefaults.leaseSafetyMargin, scenario.leaseExpirationIntervalMs / 10) / scale,
      ),
    ),
    feedPollDelay: down("feedPollDelay", scenario.feedPollDelayMs),
    leaseWatchInterval: down("leaseWatchInterval", scenario.leaseWatchIntervalMs, true),
    maxCheckpointDelay: down("maxCheckpointDelay", scenario.maxCheckpointDelayMs, true),
  };
  if (2 * scaled.leaseRenewInterval > scaled.leaseExpirationInterval)
    throw new CliInputError(
      `leaseExpirationInterval (${scaled.leaseExpirationInterval} ms after scaling) must be at least twice leaseRenewInterval (${scaled.leaseRenewInterval} ms after scaling), as the processor requires.`,
    );
  try {
    // The processor's own checks (safety margin against the renewal age, …); they read no container.
    resolveOptions({ ...scaled } as ChangeFeedProcessorOptions, () => "check");
  } catch (e) {
    if (e instanceof InvalidProcessorOptionsError) throw new CliInputError(`after scaling: ${e.message}`);
    throw e;
  }
  const up = (ms: number) => ms * scale;
  return {
    scenario: {
      ...scenario,
      leaseRenewIntervalMs: up(scaled.leaseRenewInterval),
      leaseAcquireIntervalMs: up(scaled.leaseAcquireInterval),
      leaseExpirationIntervalMs: up(scaled.leaseExpirationInterval),
      feedPollDelayMs: up(scaled.feedPollDelay),
      leaseWatchIntervalMs: up(scaled.leaseWatchInterval),
      maxCheckpointDelayMs: up(scaled.maxCheckpointDelay),
    },
    scaled,
    scale,
    windowMs,
  };
}
