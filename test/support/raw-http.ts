import { connect, type Socket } from "node:net";

/**
 * HTTP/1.1 over a raw `node:net` socket, for what fetch will not send (a forged Host header, thousands of pipelined
 * requests on one connection) and for reading answers exactly as they come off the wire.
 */

export interface RawAnswer {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: string;
}

/** One request (`Connection: close` is added): the head lines, then the body. */
export function rawRequest(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string | Buffer,
): Buffer {
  const lines = [`${method} ${path} HTTP/1.1`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== undefined && headers["transfer-encoding"] === undefined) {
    lines.push(`content-length: ${Buffer.byteLength(body)}`);
  }
  if (!Object.keys(headers).some((h) => h.toLowerCase() === "connection")) lines.push("connection: close");
  return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`), Buffer.from(body ?? "")]);
}

/**
 * Parses the complete answers at the start of `data`, in order (each with Content-Length, as the dev host sends
 * them): the answers, and how many bytes they took.
 */
export function parseAnswers(data: Buffer, head = false): { answers: RawAnswer[]; used: number } {
  const answers: RawAnswer[] = [];
  let at = 0;
  for (;;) {
    const end = data.indexOf("\r\n\r\n", at);
    if (end < 0) return { answers, used: at };
    const [statusLine, ...headerLines] = data.subarray(at, end).toString("latin1").split("\r\n");
    const headers: Record<string, string> = {};
    for (const line of headerLines) {
      const colon = line.indexOf(":");
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    const length = head ? 0 : Number(headers["content-length"] ?? 0); // an answer to HEAD has no body
    if (data.length < end + 4 + length) return { answers, used: at };
    answers.push({
      status: Number(statusLine.split(" ")[1]),
      headers,
      body: data.subarray(end + 4, end + 4 + length).toString("utf8"),
    });
    at = end + 4 + length;
  }
}

export async function openSocket(port: number): Promise<Socket> {
  const socket = connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return socket;
}

/**
 * Writes `payload` on a fresh connection and resolves with the answers once `count` of them arrived (or the server
 * closed the connection), then closes it. `head`: the requests are HEAD (answers without bodies).
 */
export async function exchange(port: number, payload: Buffer, count = 1, head = false): Promise<RawAnswer[]> {
  const socket = await openSocket(port);
  const answers: RawAnswer[] = [];
  let pending = Buffer.alloc(0);
  return new Promise<RawAnswer[]>((resolve, reject) => {
    const finish = () => {
      socket.destroy();
      resolve(answers);
    };
    socket.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      const { answers: more, used } = parseAnswers(pending, head);
      answers.push(...more);
      pending = pending.subarray(used);
      if (answers.length >= count) finish();
    });
    socket.on("end", finish);
    socket.on("error", reject);
    socket.write(payload);
  });
}

/** One request on its own connection: the answer. */
export async function rawCall(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string | Buffer,
): Promise<RawAnswer> {
  const [answer] = await exchange(port, rawRequest(method, path, headers, body), 1, method === "HEAD");
  if (!answer) throw new Error(`${method} ${path}: no answer`);
  return answer;
}
