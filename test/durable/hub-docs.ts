/** Task hub documents for tests that write a partition by hand (the store and commit-plan tests). */
import {
  type InstanceDoc,
  type MessageDoc,
  partitionKeyOf,
} from "../../packages/devhost/src/durable/documents.js";
import { eventMessage } from "./work-item-driver.js";

/** A running instance's document, stamped `lastUpdatedTime` (which tells versions apart). */
export function instanceDoc(hub: string, instanceId: string, lastUpdatedTime: string): InstanceDoc {
  return {
    id: "instance",
    pk: partitionKeyOf(hub, instanceId),
    kind: "instance",
    hub,
    instanceId,
    executionId: "e",
    name: "o",
    input: null,
    status: "Running",
    output: null,
    customStatus: null,
    createdTime: "2026-01-01T00:00:00.000Z",
    lastUpdatedTime,
    engine: {},
    historyChunks: 0,
  };
}

/** A pending message (an event raised) keyed `key`, with `payload` characters of input. */
export function messageDoc(
  hub: string,
  instanceId: string,
  key: string,
  seq: number,
  payload = 0,
): MessageDoc {
  return {
    id: `msg-${key}`,
    pk: partitionKeyOf(hub, instanceId),
    kind: "message",
    hub,
    instanceId,
    seq,
    message: eventMessage(instanceId, key, "event", "x".repeat(payload)),
  };
}
