import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createNetServer, type Server, type Socket } from "node:net";

/** The first byte of every TLS connection: a handshake record (RFC 8446 §5.1, ContentType handshake = 22). */
const TLS_HANDSHAKE = 0x16;
/** Idle HTTP keep-alive connections are kept this long (ms): the SDKs reuse theirs between requests. */
const KEEP_ALIVE_TIMEOUT_MS = 60_000;

export interface ListenerTls {
  cert: Buffer | string;
  key: Buffer | string;
  /** Answer plain HTTP on the same port too (the first byte of a connection says which it speaks). */
  http?: boolean;
}

export interface EmulatorListener {
  /** What listens: `listen`, `address`, the `error` event. */
  server: Server;
  /** Stops listening and ends every connection, idle or not. */
  close(): Promise<void>;
}

/**
 * The emulator's socket: HTTP, HTTPS, or both on one port. Both is what `cosmos-feed start` serves: current
 * @azure/cosmos (and the .NET and Java SDKs) want https://, while http:// endpoints in existing settings and
 * examples keep working; a connection's first byte tells a TLS ClientHello (0x16) from an HTTP request line.
 */
export function createListener(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  tls?: ListenerTls,
): EmulatorListener {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  const http = createHttpServer(handler);
  http.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  const https = tls ? createHttpsServer({ cert: tls.cert, key: tls.key }, handler) : undefined;
  if (https) https.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  let server: Server;
  if (!https) server = http;
  else if (!tls?.http) server = https;
  else {
    server = createNetServer({ pauseOnConnect: true }, (socket) => {
      // Until its first byte arrives the connection belongs to neither server; one that never sends is dropped.
      socket.setTimeout(KEEP_ALIVE_TIMEOUT_MS, () => socket.destroy());
      const drop = () => socket.destroy();
      socket.once("error", drop);
      socket.once("end", drop);
      const route = () => {
        const head = socket.read(1) as Buffer | null;
        if (head === null) {
          socket.once("readable", route);
          return;
        }
        socket.unshift(head);
        socket.setTimeout(0);
        socket.off("error", drop);
        socket.off("end", drop);
        // TLS: the server's TLSSocket takes the bytes already read (the one put back) before its own reads.
        (head[0] === TLS_HANDSHAKE ? https : http).emit("connection", socket);
      };
      // A 'readable' listener starts reading the paused socket (pauseOnConnect keeps it from flowing away).
      socket.once("readable", route);
    });
  }
  server.on("connection", track);
  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}
