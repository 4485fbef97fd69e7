import type { Socket } from "node:net";
import { PassThrough } from "node:stream";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { settled, waitUntil } from "../../bench/lib/until.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { tooSlow, watchDataRate } from "../../packages/devhost/src/http/dataRate.js";
import { RequestThrottle } from "../../packages/devhost/src/http/throttle.js";
import { frontDoorHosts } from "../support/front-door-app.js";
import { openSocket, parseAnswers, rawCall } from "../support/raw-http.js";

// Slow clients at the front door: bodies that trickle in, headers that never end, and refusals a client still
// sending can read. Judged by answers and counts over real sockets; time is a FakeClock's wherever a rule is timed.

const serve = frontDoorHosts({ afterEach, afterAll });
// Registered after the hosts' hook, so it runs before it (after-hooks run in reverse): no host waits on a socket.
const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
});

/** A connection to `port` (destroyed after the test): `data()` is what came back on it, `closed` its close. */
async function recordedSocket(port: number) {
  const socket = await openSocket(port);
  sockets.push(socket);
  let data = Buffer.alloc(0);
  socket.on("data", (c: Buffer) => {
    data = Buffer.concat([data, c]);
  });
  socket.on("error", () => {});
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  return { socket, closed, data: () => data };
}

/** A connection that sends a request head declaring `length` bytes of body, then `sent` of them, and no more. */
async function slowUpload(port: number, length: number, sent: number) {
  const { socket, closed, data } = await recordedSocket(port);
  const head = `POST /api/echo HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\ncontent-length: ${length}\r\n\r\n`;
  await new Promise<void>((resolve) => socket.write(head + "x".repeat(sent), () => resolve()));
  return { socket, closed, answers: () => parseAnswers(data()).answers };
}

describe("the minimum request body data rate (Kestrel's MinRequestBodyDataRate)", () => {
  it("is an average since the body was first awaited, applied after the grace period, paused time not counted", async () => {
    const rule = { minBytesPerSecond: 240, graceMs: 5_000, checkEveryMs: 1_000 };
    expect(tooSlow({ ...rule, clock: new FakeClock() }, 0, 5_000)).toBe(false); // within the grace period
    expect(tooSlow({ ...rule, clock: new FakeClock() }, 1_200, 5_001)).toBe(true); // 239.95 bytes/s
    expect(tooSlow({ ...rule, clock: new FakeClock() }, 1_201, 5_000.5)).toBe(false);
    expect(tooSlow({ ...rule, minBytesPerSecond: 0, clock: new FakeClock() }, 0, 1e9)).toBe(false);

    const clock = new FakeClock();
    const body = new PassThrough();
    body.resume();
    let cut = 0;
    watchDataRate(body, { ...rule, clock }, () => cut++);
    body.write(Buffer.alloc(1_700)); // 340 bytes/s over 5 s, 283 over 6 s, 242 over 7 s, 212 over 8 s
    await clock.advance(7_000);
    expect(cut).toBe(0);
    await clock.advance(1_000);
    expect(cut).toBe(1);
    await clock.advance(10_000);
    expect(cut).toBe(1); // once

    // While the reader holds the body back (back-pressure), the client is not the slow one: that time is not counted.
    const held = new PassThrough();
    held.resume();
    let heldCut = 0;
    watchDataRate(held, { ...rule, clock }, () => heldCut++);
    held.write(Buffer.alloc(1_700));
    await clock.advance(7_000);
    held.pause();
    await clock.advance(60_000);
    expect(heldCut).toBe(0);
    held.resume();
    await clock.advance(1_000);
    expect(heldCut).toBe(1);
  });

  it("a body below the rate after the grace period is answered 408 and its connection closed; complete bodies are not timed", async () => {
    const clock = new FakeClock();
    const host = await serve({}, { clock });
    const done = await slowUpload(host.port, 5, 5);
    await settled("the complete upload is answered", done.closed);
    await clock.advance(60_000);
    expect(done.answers().map((a) => [a.status, a.body])).toEqual([
      [200, JSON.stringify({ method: "POST", bytes: 5 })],
    ]);
    const slow = await slowUpload(host.port, 100_000, 10);
    // Its body is being watched (the clock's only sleeper) before time moves.
    await waitUntil("the slow body is watched", () => clock.pendingTimers === 1);
    await clock.advance(5_000);
    expect(slow.answers()).toEqual([]); // the grace period
    await clock.advance(1_000);
    await settled("the slow upload's connection closes", slow.closed);
    const [answer] = slow.answers();
    expect(answer.status).toBe(408);
    expect(answer.headers.connection).toBe("close");
    expect(JSON.parse(answer.body)).toMatchObject({ code: "RequestBodyTimeout" });
    expect(JSON.parse(answer.body).message).toMatch(/240 bytes\/s.*DEV_HTTP_MIN_REQUEST_BODY_DATA_RATE/);
  });
});

describe("slow clients hold no throttle slot", () => {
  it("an admitted request counts as outstanding but runs only once it takes a slot (after its body is read)", async () => {
    const throttle = new RequestThrottle(1, 3);
    const reading = [throttle.tryAdmit(), throttle.tryAdmit()];
    expect([throttle.running, throttle.admitted]).toEqual([0, 2]); // reading their bodies: no slot taken
    const quick = throttle.tryAdmit();
    expect(throttle.tryAdmit()).toBeUndefined(); // 3 outstanding: 429
    const release = await quick?.slot();
    expect([throttle.running, throttle.admitted]).toEqual([1, 2]);
    let second = false;
    const next = reading[0]?.slot().then((r) => {
      second = true;
      return r;
    });
    await new Promise((r) => setImmediate(r));
    expect(second).toBe(false); // the one slot is taken
    release?.();
    (await next)?.();
    expect(second).toBe(true);
    reading[1]?.leave(); // its client went away while its body arrived
    expect([throttle.running, throttle.admitted, throttle.waiting]).toEqual([0, 0, 0]);
    expect(throttle.tryAdmit()).toBeDefined();
  });

  it("500 connections whose bodies never finish: a normal request is still answered 200", async () => {
    // The rule is off, so that only where bodies are read (before a slot is taken) can be the reason.
    const host = await serve({
      values: { DEV_HTTP_MIN_REQUEST_BODY_DATA_RATE: "0" },
      hostJson: { extensions: { http: { maxConcurrentRequests: 100, maxOutstandingRequests: 1_000 } } },
    });
    const slow = [];
    for (let i = 0; i < 500; i++) slow.push(await slowUpload(host.port, 1_000_000, 3));
    const normal = await settled(
      "a normal request beside 500 slow uploads",
      rawCall(host.port, "POST", "/api/echo", { host: "127.0.0.1" }, "hello"),
    );
    expect(normal.status).toBe(200);
    expect(JSON.parse(normal.body)).toEqual({ method: "POST", bytes: 5 });
    // The slow ones are still waiting for their bodies: none was answered or cut.
    expect(slow.filter((s) => s.answers().length > 0 || s.socket.destroyed)).toHaveLength(0);
  });

  it("a client that never finishes its headers (slowloris) is cut after DEV_HTTP_REQUEST_HEADERS_TIMEOUT_MS", async () => {
    const host = await serve({ values: { DEV_HTTP_REQUEST_HEADERS_TIMEOUT_MS: "1000" } });
    const { socket, closed, data } = await recordedSocket(host.port);
    socket.write("GET /api/echo HTTP/1.1\r\nhost: 127.0.0.1\r\nx-never: ");
    await settled("the server closes the connection", closed);
    expect(data().toString("latin1")).toMatch(/^HTTP\/1\.1 408 /);
  });

  /** A keep-alive connection to `port` that has had one GET answered; `answers()` counts what came back on it. */
  async function keptAlive(port: number) {
    const { socket, closed, data } = await recordedSocket(port);
    const get = () => socket.write("GET /api/echo HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
    const answers = () => parseAnswers(data()).answers;
    get();
    await waitUntil("the first answer", () => answers().length === 1);
    return { socket, closed, get, answers };
  }

  it("an idle keep-alive connection is closed after DEV_HTTP_KEEP_ALIVE_TIMEOUT_MS", async () => {
    const host = await serve({ values: { DEV_HTTP_KEEP_ALIVE_TIMEOUT_MS: "1000" } });
    const c = await keptAlive(host.port);
    expect(c.answers()[0]?.status).toBe(200);
    await settled("the server closes the idle connection", c.closed);
  });

  it("by default an idle keep-alive connection outlives node's 5 s (Kestrel's 130 s): a request 6 s later is answered on it", async () => {
    const host = await serve();
    const c = await keptAlive(host.port);
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    expect(c.socket.destroyed).toBe(false);
    c.get();
    await waitUntil("the second answer on the same connection", () => c.answers().length === 2);
    expect(c.answers().map((a) => a.status)).toEqual([200, 200]);
  });
});
