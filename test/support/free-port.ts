import { createServer } from "node:net";

/**
 * A TCP port on 127.0.0.1 that nothing listens on now (the OS's pick for port 0), for a server the test starts
 * by port number — node's `--inspect=<port>`, which must be the same port at each start. Port 0 would give every
 * start another one.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen({ host: "127.0.0.1", port: 0 }, () => {
      const address = s.address();
      const port = typeof address === "object" && address ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}
