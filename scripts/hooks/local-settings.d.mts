// Types of local-settings.mjs (plain Node, so that azd runs it with no build step), for the TypeScript tests.
export interface LocalSettingsFile {
  IsEncrypted: false;
  Values: Record<string, string>;
  Host: { LocalHttpPort: number };
}
export declare function localSettingsFor(env: NodeJS.ProcessEnv): {
  settings: LocalSettingsFile | undefined;
  lines: string[];
};
