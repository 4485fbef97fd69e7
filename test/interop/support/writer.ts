import type { Container } from "@azure/cosmos";

/** Writes new documents `w<n>` (partition key `k<n mod 97>`) one after another until stopped; keeps their ids. */
export class Writer {
  readonly ids: string[] = [];
  private running = true;
  private readonly done: Promise<void>;

  constructor(container: Container, everyMs: number) {
    this.done = (async () => {
      for (let n = 0; this.running; n++) {
        const id = `w${n}`;
        await container.items.create({ id, pk: `k${n % 97}`, n });
        this.ids.push(id);
        await new Promise((r) => setTimeout(r, everyMs));
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}
