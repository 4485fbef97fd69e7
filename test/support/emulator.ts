import { CosmosClient, type CosmosClientOptions } from "@azure/cosmos";
import {
  type EmulatorOptions,
  type RunningEmulator,
  startEmulator,
} from "../../packages/emulator/src/index.js";

export interface TestEmulator {
  emulator: RunningEmulator;
  client: CosmosClient;
  /** A new client (own caches), e.g. to act as a second host. */
  newClient(options?: Partial<CosmosClientOptions>): CosmosClient;
  close(): Promise<void>;
}

/** Starts an emulator on a free port and an unmodified @azure/cosmos client talking to it over a socket. */
export async function startTestEmulator(options: EmulatorOptions = {}): Promise<TestEmulator> {
  const emulator = await startEmulator({ port: 0, ...options });
  const clients: CosmosClient[] = [];
  const newClient = (extra: Partial<CosmosClientOptions> = {}) => {
    const c = new CosmosClient({ endpoint: emulator.endpoint, key: emulator.key, ...extra });
    clients.push(c);
    return c;
  };
  const client = newClient();
  return {
    emulator,
    client,
    newClient,
    close: async () => {
      for (const c of clients) c.dispose();
      await emulator.close();
    },
  };
}

let counter = 0;
/** A unique name per test (databases are cheap). */
export function uniqueName(prefix: string): string {
  counter++;
  return `${prefix}-${process.pid}-${counter}`;
}
