import type { CompositeIndexPath } from "./evaluate.js";

/** A query handed to a worker thread (plain data: it crosses the thread boundary by structured clone). */
export interface QueryJob {
  id: number;
  text: string;
  parameters: { name: string; value: unknown }[];
  /** The documents' stored JSON (cheaper to copy across threads than object graphs). */
  docs: string[];
  compositeIndexes?: CompositeIndexPath[][];
  /** Each document's ORDER BY tie group (see ExecuteOptions.tieGroups). */
  tieGroups?: number[];
}

export type QueryJobResult =
  | { id: number; rows: string[]; sources: number[]; executionMs: number }
  | { id: number; error: { name: string; message: string; code?: string; start?: number; end?: number } };

/**
 * Rows (FROM/JOIN bindings) one query may produce in a worker before it is refused: a runaway cross JOIN
 * must end with a clear 400, not take the worker's heap down.
 */
export const WORKER_MAX_ROWS = 5_000_000;
