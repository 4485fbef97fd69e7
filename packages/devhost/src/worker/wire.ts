import type { HttpData, InvocationResponse, ParameterBinding, TypedData } from "../coreTypes.js";
import type { HostToWorker, WorkerToHost } from "./protocol.js";

/**
 * The channel's encoding. The channel is Node's IPC channel in `serialization: "json"` mode: JSON.stringify and
 * JSON.parse cost a fifth of what the "advanced" mode's v8 serializer costs for an invocation's messages (measured
 * in bench:app's single-request phase, where both messages of every request cross it), and they give a handler's
 * result JSON's meaning, as the Node worker's conversion to RpcTypedData does (toJSON called, class instances as
 * plain objects). JSON has no bytes, so the few places that carry bytes — typed data's `bytes`/`stream`, an HTTP
 * body, a response body's pieces — cross as base64 in a `{ base64 }` object and are Buffers again on arrival.
 */
export interface Base64Bytes {
  base64: string;
}

const encodeBytes = (b: Uint8Array): Base64Bytes => ({
  base64: Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64"),
});

function decodeBytes(b: unknown): Uint8Array | undefined {
  if (b === undefined || b === null) return undefined;
  const text = (b as Partial<Base64Bytes>).base64;
  return typeof text === "string" ? Buffer.from(text, "base64") : undefined;
}

/** Typed data with its bytes (its own, or its HTTP body's) as base64; the same object when it has none. */
function encodeTyped(d: TypedData | null | undefined): TypedData | null | undefined {
  if (!d) return d;
  const body = d.http?.body;
  if (
    d.bytes === undefined &&
    d.stream === undefined &&
    body?.bytes === undefined &&
    body?.stream === undefined
  )
    return d;
  const out: Record<string, unknown> = { ...d };
  if (d.bytes !== undefined) out.bytes = encodeBytes(d.bytes);
  if (d.stream !== undefined) out.stream = encodeBytes(d.stream);
  if (d.http && body) out.http = { ...d.http, body: encodeTyped(body) ?? undefined } satisfies HttpData;
  return out as TypedData;
}

/** The inverse of encodeTyped, in place (the object is the channel's own, fresh from JSON.parse). */
function decodeTyped(d: TypedData | null | undefined): void {
  if (!d) return;
  if (d.bytes !== undefined) d.bytes = decodeBytes(d.bytes);
  if (d.stream !== undefined) d.stream = decodeBytes(d.stream);
  if (d.http?.body) decodeTyped(d.http.body);
}

/** The bindings with their bytes as base64; the same array when none has bytes (most invocations). */
function encodeBindings(list: ParameterBinding[] | undefined): ParameterBinding[] | undefined {
  if (!list) return list;
  let out: ParameterBinding[] | undefined;
  for (let i = 0; i < list.length; i++) {
    const p = list[i];
    const data = encodeTyped(p.data);
    if (data !== p.data) {
      out ??= [...list];
      out[i] = { ...p, data };
    }
  }
  return out ?? list;
}

function encodeTypedRecord(r: Record<string, TypedData> | undefined): Record<string, TypedData> | undefined {
  if (!r) return r;
  let out: Record<string, TypedData> | undefined;
  for (const [k, v] of Object.entries(r)) {
    const e = encodeTyped(v);
    if (e !== v) {
      out ??= { ...r };
      out[k] = e as TypedData;
    }
  }
  return out ?? r;
}

function encodeResponse(r: InvocationResponse | undefined): InvocationResponse | undefined {
  if (!r) return r;
  const returnValue = encodeTyped(r.returnValue);
  const outputData = encodeBindings(r.outputData);
  return returnValue === r.returnValue && outputData === r.outputData ? r : { ...r, returnValue, outputData };
}

function decodeResponse(r: InvocationResponse | undefined): void {
  if (!r) return;
  decodeTyped(r.returnValue);
  for (const p of r.outputData ?? []) decodeTyped(p.data);
}

/** A host message as it goes on the channel. */
export function hostMessageToWire(m: HostToWorker): HostToWorker {
  if (m.kind !== "invoke") return m;
  const { request } = m;
  const inputData = encodeBindings(request.inputData) ?? [];
  const triggerMetadata = encodeTypedRecord(request.triggerMetadata);
  if (inputData === request.inputData && triggerMetadata === request.triggerMetadata) return m;
  return { ...m, request: { ...request, inputData, triggerMetadata } };
}

/** A host message as it came off the channel (in place). */
export function hostMessageFromWire(m: HostToWorker): HostToWorker {
  if (m.kind === "invoke") {
    for (const p of m.request.inputData) decodeTyped(p.data);
    for (const v of Object.values(m.request.triggerMetadata ?? {})) decodeTyped(v);
  }
  return m;
}

/** A worker message as it goes on the channel. */
export function workerMessageToWire(m: WorkerToHost): WorkerToHost {
  if (m.kind === "result") {
    const response = encodeResponse(m.response);
    return response === m.response ? m : { ...m, response };
  }
  if (m.kind === "bodyChunk") return { ...m, chunk: encodeBytes(m.chunk) as unknown as Uint8Array };
  return m;
}

/** A worker message as it came off the channel (in place). */
export function workerMessageFromWire(m: WorkerToHost): WorkerToHost {
  if (m.kind === "result") decodeResponse(m.response);
  else if (m.kind === "bodyChunk") m.chunk = decodeBytes(m.chunk) ?? new Uint8Array(0);
  return m;
}
