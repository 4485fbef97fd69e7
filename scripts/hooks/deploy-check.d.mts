// Types of deploy-check.mjs (plain Node, so that azd runs it with no build step), for the TypeScript tests.
export interface PostdeployKnob {
  setting: string;
  unit: string;
  default: number;
  min: number;
  max: number;
  description: string;
}
export declare const POSTDEPLOY_SETTINGS: { attempts: PostdeployKnob; retryIntervalMs: PostdeployKnob };
export declare function readPostdeploySettings(env?: NodeJS.ProcessEnv): {
  attempts: number;
  retryIntervalMs: number;
};
export declare const PROBE_ROUTE: string;
export interface DeployCheckResult {
  name: "auth" | "health" | "functions";
  ok: boolean;
  line: string;
}
export declare function runDeployChecks(options: {
  baseUrl: string;
  expectedFunctions: readonly string[];
  listFunctions: () => Promise<readonly string[]>;
  attempts?: number;
  retryIntervalMs?: number;
  wait?: (ms: number) => Promise<void>;
  fetchImpl?: typeof fetch;
}): Promise<DeployCheckResult[]>;
