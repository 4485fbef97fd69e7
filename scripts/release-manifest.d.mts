// Types of release-manifest.mjs (plain Node: npm runs it as the packages' prepack/postpack), for the TypeScript tests.
export declare const BACKUP_NAME: string;
export declare const SOURCE_CONDITION: string;
export declare function releaseManifest<T extends { exports?: unknown; scripts?: Record<string, string> }>(
  manifest: T,
): T;
export declare function restoreManifest(dir: string): boolean;
export declare function stripManifest(dir: string): void;
