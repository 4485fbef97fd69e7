import { DevHostError } from "./errors.js";

/** A dev host knob: its app setting (read from the environment, so local.settings.json Values work), unit, default and range. */
export interface WholeNumberKnob {
  readonly setting: string;
  readonly unit: string;
  readonly default: number;
  readonly min: number;
  readonly max: number;
  readonly description: string;
}

/**
 * Reads every knob from `env`: an unset or blank setting takes its default, any other must be a whole number within
 * the knob's range. `check` looks at the values together, once each is fine, and returns a problem or undefined. Bad
 * values are one DevHostError (`Invalid <what>:`) naming each bad setting, what is allowed, the default and what was
 * given.
 */
export function readWholeNumberSettings<K extends string>(
  what: string,
  knobs: Readonly<Record<K, WholeNumberKnob>>,
  env: NodeJS.ProcessEnv,
  check?: (values: Record<K, number>) => string | undefined,
): Record<K, number> {
  const problems: string[] = [];
  const out = {} as Record<K, number>;
  for (const [key, k] of Object.entries(knobs) as [K, WholeNumberKnob][]) {
    const raw = env[k.setting]?.trim();
    if (raw === undefined || raw === "") {
      out[key] = k.default;
      continue;
    }
    const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < k.min || n > k.max) {
      problems.push(
        `${k.setting} must be a whole number of ${k.unit} from ${k.min} to ${k.max} (default ${k.default}); got '${raw}'.`,
      );
      continue;
    }
    out[key] = n;
  }
  const together = problems.length === 0 ? check?.(out) : undefined;
  if (together !== undefined) problems.push(together);
  if (problems.length > 0) {
    throw new DevHostError(`Invalid ${what}:\n  ${problems.join("\n  ")}`, { code: "InvalidOption" });
  }
  return out;
}
