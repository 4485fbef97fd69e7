import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Container } from "@azure/cosmos";
import { afterAll } from "vitest";
import { startTestEmulator, type TestEmulator } from "./emulator.js";

/**
 * Emulators started one after the other on the same data folder (a restart, or a folder rewritten between two
 * starts). Call at a test file's top level: the folder and any emulator left running go at the file's end.
 */
export interface OneFolder {
  dataDir: string;
  start(): Promise<TestEmulator>;
  stop(t: TestEmulator): Promise<void>;
}

export function emulatorsOnOneFolder(prefix: string): OneFolder {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  const running: TestEmulator[] = [];
  afterAll(async () => {
    await Promise.allSettled(running.map((t) => t.close()));
    rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    dataDir,
    start: async () => {
      const t = await startTestEmulator({ dataDir });
      running.push(t);
      return t;
    },
    stop: async (t) => {
      await t.close();
      running.splice(running.indexOf(t), 1);
    },
  };
}

/** A new database holding container "docs" (`/pk`, V2 hash) with 12 000 RU/s: two physical ranges. */
export async function twoRangeContainer(t: TestEmulator, databaseId: string): Promise<Container> {
  const db = (await t.client.databases.create({ id: databaseId })).database;
  return (
    await db.containers.create(
      { id: "docs", partitionKey: { paths: ["/pk"], version: 2 } },
      { offerThroughput: 12_000 },
    )
  ).container;
}

/** The LSN a session token ends with (`range:-1#lsn`). */
export const lsnOf = (token: string | null): number => Number(/#(\d+)$/.exec(token ?? "")?.[1]);
