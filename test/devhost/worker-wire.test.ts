import { describe, expect, it } from "vitest";
import type { HostToWorker, WorkerToHost } from "../../packages/devhost/src/worker/protocol.js";
import {
  hostMessageFromWire,
  hostMessageToWire,
  workerMessageFromWire,
  workerMessageToWire,
} from "../../packages/devhost/src/worker/wire.js";

/** What the IPC channel in JSON mode does to a message: JSON.stringify, then JSON.parse on the other side. */
const overJson = <T>(m: T): T => JSON.parse(JSON.stringify(m)) as T;
const bytes = (...b: number[]) => new Uint8Array(b);
/** Typed arrays compared by their bytes (a Buffer arrives where a Uint8Array left). */
const plain = (v: unknown): unknown => {
  if (v instanceof Uint8Array) return { bytes: [...v] };
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === "object")
    return Object.fromEntries(
      Object.entries(v).flatMap(([k, x]) => (x === undefined ? [] : [[k, plain(x)]])),
    );
  return v;
};

describe("the worker channel's encoding (JSON, bytes as base64)", () => {
  it("carries an invocation's bytes both ways: HTTP body, typed data bytes and stream, trigger metadata", () => {
    // A view into a larger buffer, as Buffers from a pool are: only its own bytes cross.
    const pooled = new Uint8Array([9, 9, 1, 2, 3, 9]).subarray(2, 5);
    const invoke: HostToWorker = {
      kind: "invoke",
      functionName: "f",
      request: {
        invocationId: "i",
        inputData: [
          { name: "req", data: { http: { method: "POST", url: "http://x/", body: { bytes: pooled } } } },
          { name: "blob", data: { bytes: bytes(0, 255, 128) } },
          { name: "s", data: { stream: bytes(7) } },
          { name: "doc", data: { json: '{"a":1}' } },
          { name: "none", data: null },
        ],
        triggerMetadata: { b: { bytes: bytes(4, 5) }, s: { string: "x" } },
      },
    };
    const back = hostMessageFromWire(overJson(hostMessageToWire(invoke)));
    expect(plain(back)).toEqual(plain(invoke));
    const http = back.kind === "invoke" ? back.request.inputData[0].data?.http?.body?.bytes : undefined;
    expect(http).toBeInstanceOf(Uint8Array);
    expect([...(http ?? [])]).toEqual([1, 2, 3]);

    const result: WorkerToHost = {
      kind: "result",
      invocationId: "i",
      response: {
        invocationId: "i",
        returnValue: { http: { statusCode: "200", headers: { a: "b" }, body: { bytes: bytes(111, 107) } } },
        outputData: [
          { name: "out", data: { bytes: bytes(1) } },
          { name: "o2", data: { string: "s" } },
        ],
      },
      resultCloned: false,
      returned: true,
    };
    expect(plain(workerMessageFromWire(overJson(workerMessageToWire(result))))).toEqual(plain(result));

    const chunk: WorkerToHost = { kind: "bodyChunk", invocationId: "i", chunk: bytes(1, 2, 250), last: true };
    const chunkBack = workerMessageFromWire(overJson(workerMessageToWire(chunk)));
    expect(plain(chunkBack)).toEqual(plain(chunk));
  });

  it("sends a message without bytes as it is, and leaves the caller's message unchanged", () => {
    const load: HostToWorker = { kind: "load", appDir: "/app" };
    expect(hostMessageToWire(load)).toBe(load);
    const invoke: HostToWorker = {
      kind: "invoke",
      functionName: "f",
      request: {
        invocationId: "i",
        inputData: [{ name: "req", data: { http: { method: "GET", url: "http://x/" } } }],
      },
    };
    expect(hostMessageToWire(invoke)).toBe(invoke);
    const body = bytes(1, 2);
    const withBody: HostToWorker = {
      kind: "invoke",
      functionName: "f",
      request: { invocationId: "i", inputData: [{ name: "req", data: { http: { body: { bytes: body } } } }] },
    };
    hostMessageToWire(withBody);
    expect(withBody.kind === "invoke" && withBody.request.inputData[0].data?.http?.body?.bytes).toBe(body);
  });
});
