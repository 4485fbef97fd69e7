import { afterEach, describe, expect, it, vi } from "vitest";
import { npmCommand } from "../../packages/devhost/src/build.js";
import { watchNpmShell } from "../../packages/emulator/src/lifecycle/npm-shell.js";

afterEach(() => vi.useRealTimers());

describe("under npm, the CLI stops once the shell npm ran it in is gone (npm's SIGTERM killed it)", () => {
  it("calls onGone once when the parent pid changes (POSIX re-parents an orphan)", () => {
    vi.useFakeTimers();
    let parent = 4242;
    let gone = 0;
    watchNpmShell({
      env: { npm_lifecycle_event: "start" },
      parentPid: () => parent,
      exists: () => true,
      everyMs: 250,
      onGone: () => gone++,
    });
    vi.advanceTimersByTime(1_000);
    expect(gone).toBe(0);
    parent = 1;
    vi.advanceTimersByTime(250);
    expect(gone).toBe(1);
    vi.advanceTimersByTime(10_000);
    expect(gone).toBe(1);
  });

  it("calls onGone when the parent no longer exists though its pid stays (Windows does not re-parent)", () => {
    vi.useFakeTimers();
    let alive = true;
    let gone = 0;
    watchNpmShell({
      env: { npm_lifecycle_event: "start" },
      parentPid: () => 4242,
      exists: (pid) => pid === 4242 && alive,
      everyMs: 250,
      onGone: () => gone++,
    });
    vi.advanceTimersByTime(500);
    alive = false;
    vi.advanceTimersByTime(250);
    expect(gone).toBe(1);
  });

  it("does nothing outside npm (nohup, a service manager: a parent may go and the CLI stays)", () => {
    vi.useFakeTimers();
    let parent = 4242;
    let gone = 0;
    const stop = watchNpmShell({ env: {}, parentPid: () => parent, everyMs: 250, onGone: () => gone++ });
    parent = 1;
    vi.advanceTimersByTime(1_000);
    expect(gone).toBe(0);
    stop();
  });

  it("stops watching when asked", () => {
    vi.useFakeTimers();
    let parent = 4242;
    let gone = 0;
    const stop = watchNpmShell({
      env: { npm_lifecycle_event: "start" },
      parentPid: () => parent,
      exists: () => true,
      everyMs: 250,
      onGone: () => gone++,
    });
    stop();
    parent = 1;
    vi.advanceTimersByTime(1_000);
    expect(gone).toBe(0);
  });
});

describe("npm on Windows", () => {
  it("is npm.cmd through the shell (Node ≥ 20.12 spawns no .cmd without one), plain npm elsewhere", () => {
    expect(npmCommand("win32")).toEqual({ command: "npm.cmd", shell: true });
    expect(npmCommand("linux")).toEqual({ command: "npm", shell: false });
    expect(npmCommand("darwin")).toEqual({ command: "npm", shell: false });
  });
});
