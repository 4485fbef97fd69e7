import http from "node:http";

/**
 * Guards the HTTP streaming proxy that @azure/functions starts in the worker (`app.setup({ enableHttpStream })`,
 * its src/http/httpProxy.ts). The library listens on every interface and keeps a request without a known
 * `x-ms-invocation-id` open forever. In the dev host's worker the proxy listens on loopback only, a request
 * without the header gets 400, and one whose id no invocation claims within `waitMs` (DEVHOST_STREAM_PROXY_WAIT_MS)
 * gets 404 — answered, never left hanging. Only servers created while `watch` runs (the library's
 * getCapabilities) are touched; the app's own servers are not.
 */
export interface StreamProxyGuard {
  /** Runs `step` with http.createServer watched (the library creates its proxy in getCapabilities). */
  watch<T>(step: () => Promise<T>): Promise<T>;
  /** An HTTP invocation of this id is running: its proxied request is the library's to take. */
  expect(invocationId: string): void;
  forget(invocationId: string): void;
}

const HEADER = "x-ms-invocation-id";

export function guardStreamProxy(waitMs: number): StreamProxyGuard {
  const expected = new Set<string>();
  const waiting = new Map<string, () => void>();

  const refuse = (res: http.ServerResponse, status: number, code: string, message: string) => {
    const body = JSON.stringify({ code, message });
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  };

  const guard = (server: http.Server) => {
    const emit = server.emit.bind(server);
    server.emit = ((event: string, ...args: unknown[]) => {
      if (event !== "request") return emit(event, ...args);
      const [req, res] = args as [http.IncomingMessage, http.ServerResponse];
      const id = req.headers[HEADER];
      if (typeof id !== "string" || id === "") {
        refuse(
          res,
          400,
          "MissingInvocationId",
          `A request to the HTTP stream proxy needs the ${HEADER} header.`,
        );
        return true;
      }
      if (expected.has(id)) return emit(event, ...args);
      // The invocation may reach this worker a moment after its request: wait for it, briefly.
      const timer = setTimeout(() => {
        waiting.delete(id);
        refuse(res, 404, "UnknownInvocation", `No HTTP invocation '${id}' is running in this worker.`);
      }, waitMs);
      waiting.set(id, () => {
        clearTimeout(timer);
        waiting.delete(id);
        emit(event, ...args);
      });
      return true;
    }) as typeof server.emit;
    const listen = server.listen.bind(server) as (...args: unknown[]) => http.Server;
    server.listen = ((...args: unknown[]) => {
      // The library calls listen(callback) or listen(port[, callback]): bind those to loopback.
      if (args.length === 0 || typeof args[0] === "function") return listen(0, "127.0.0.1", ...args);
      if (typeof args[0] === "number" && typeof args[1] !== "string")
        return listen(args[0], "127.0.0.1", ...args.slice(1));
      return listen(...args);
    }) as typeof server.listen;
    return server;
  };

  return {
    async watch(step) {
      const createServer = http.createServer;
      http.createServer = ((...args: Parameters<typeof http.createServer>) =>
        guard(createServer(...args))) as typeof http.createServer;
      try {
        return await step();
      } finally {
        http.createServer = createServer;
      }
    },
    expect(invocationId) {
      expected.add(invocationId);
      waiting.get(invocationId)?.();
    },
    forget(invocationId) {
      expected.delete(invocationId);
    },
  };
}
