import { createHash, randomBytes } from "node:crypto";
import { request } from "node:http";
import type { Socket } from "node:net";

/**
 * A WebSocket client (RFC 6455) over node:http's upgrade, enough for node's inspector: text messages both ways,
 * fragmented or not, pings answered, close. Node 20 has no WebSocket without --experimental-websocket, and the
 * tests take no new dependency for one; a real socket and the real protocol either way.
 */
export interface TextSocket {
  send(text: string): void;
  onMessage(listener: (text: string) => void): void;
  /** Resolves once the connection is gone (closed by either side, or the process behind it exited). */
  closed: Promise<void>;
  close(): void;
}

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/** One frame from the client: FIN set, masked as a client must. */
function frame(opcode: number, payload: Buffer): Buffer {
  const mask = randomBytes(4);
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | opcode, 0x80 | n]) : Buffer.alloc(n < 65536 ? 4 : 10);
  if (n >= 126) {
    head[0] = 0x80 | opcode;
    if (n < 65536) {
      head[1] = 0x80 | 126;
      head.writeUInt16BE(n, 2);
    } else {
      head[1] = 0x80 | 127;
      head.writeBigUInt64BE(BigInt(n), 2);
    }
  }
  const body = Buffer.alloc(n);
  for (let i = 0; i < n; i++) body[i] = payload[i] ^ mask[i % 4];
  return Buffer.concat([head, mask, body]);
}

export function connectWebSocket(url: string): Promise<TextSocket> {
  const u = new URL(url);
  const key = randomBytes(16).toString("base64");
  return new Promise((resolve, reject) => {
    const req = request({
      host: u.hostname,
      port: u.port,
      path: u.pathname + u.search,
      headers: {
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": key,
      },
    });
    req.once("error", reject);
    req.once("response", (res) => reject(new Error(`${url} answered ${res.statusCode}, not an upgrade`)));
    req.once("upgrade", (res, socket: Socket, head: Buffer) => {
      const accept = createHash("sha1")
        .update(key + GUID)
        .digest("base64");
      if (res.headers["sec-websocket-accept"] !== accept) {
        socket.destroy();
        reject(new Error(`${url}: wrong Sec-WebSocket-Accept`));
        return;
      }
      resolve(speak(socket, head));
    });
    req.end();
  });
}

function speak(socket: Socket, head: Buffer): TextSocket {
  const listeners: ((text: string) => void)[] = [];
  let pending = head;
  let fragments: Buffer[] = [];
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.on("error", () => socket.destroy());
  const write = (opcode: number, payload: Buffer) => {
    if (!socket.destroyed) socket.write(frame(opcode, payload));
  };
  const read = () => {
    for (;;) {
      if (pending.length < 2) return;
      const opcode = pending[0] & 0x0f;
      const fin = (pending[0] & 0x80) !== 0;
      let n = pending[1] & 0x7f;
      let at = 2;
      if (n === 126) {
        if (pending.length < 4) return;
        n = pending.readUInt16BE(2);
        at = 4;
      } else if (n === 127) {
        if (pending.length < 10) return;
        n = Number(pending.readBigUInt64BE(2));
        at = 10;
      }
      if (pending.length < at + n) return;
      const payload = pending.subarray(at, at + n);
      pending = pending.subarray(at + n);
      if (opcode === 0x8) {
        write(0x8, Buffer.alloc(0));
        socket.end();
        return;
      }
      if (opcode === 0x9) write(0xa, Buffer.from(payload));
      if (opcode === 0x1 || opcode === 0x0) {
        fragments.push(Buffer.from(payload));
        if (fin) {
          const text = Buffer.concat(fragments).toString("utf8");
          fragments = [];
          for (const l of listeners) l(text);
        }
      }
    }
  };
  socket.on("data", (chunk: Buffer) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    read();
  });
  queueMicrotask(read); // what came with the upgrade's answer
  return {
    send: (text) => write(0x1, Buffer.from(text, "utf8")),
    onMessage: (l) => {
      listeners.push(l);
    },
    closed,
    close: () => {
      write(0x8, Buffer.alloc(0));
      socket.end();
    },
  };
}
