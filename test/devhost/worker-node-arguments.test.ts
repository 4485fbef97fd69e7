import { describe, expect, it } from "vitest";
import { stderrLevel } from "../../packages/devhost/src/worker/console-lines.js";
import {
  inspectorOf,
  parseHostPort,
  parseInspectFlag,
  workerNodeArguments,
} from "../../packages/devhost/src/worker/node-arguments.js";

// How the worker's node arguments are read (the host's RpcWorkerConfigFactory and DefaultWorkerProcessFactory),
// where node's inspector then listens (node's --inspect flags), and the level of the worker's stderr lines (the
// host's WorkerProcess.ParseErrorMessageAndLog).

describe("languageWorkers__node__arguments", () => {
  it("is split on whitespace, found under either separator and in any case", () => {
    expect(
      workerNodeArguments({ languageWorkers__node__arguments: "  --inspect=9230   --enable-source-maps " }),
    ).toEqual({
      args: ["--inspect=9230", "--enable-source-maps"],
      source: "languageWorkers__node__arguments",
      inspector: { host: "127.0.0.1", port: 9230 },
    });
    expect(workerNodeArguments({ "languageWorkers:node:arguments": "--inspect" })?.inspector).toEqual({
      host: "127.0.0.1",
      port: 9229,
    });
    expect(workerNodeArguments({ LANGUAGEWORKERS__NODE__ARGUMENTS: "--max-old-space-size=512" })).toEqual({
      args: ["--max-old-space-size=512"],
      source: "LANGUAGEWORKERS__NODE__ARGUMENTS",
      inspector: undefined,
    });
    expect(workerNodeArguments({ languageWorkers__node__arguments: "   " })).toBeUndefined();
    expect(workerNodeArguments({ languageWorkers__python__arguments: "--inspect" })).toBeUndefined();
  });

  it("expands %NAME% from the environment and drops names that are not set, as the host does", () => {
    const env = {
      PORT_A: "9333",
      languageWorkers__node__arguments: "--inspect=%PORT_A% %NOT_SET% --title=%PORT_A%x",
    };
    expect(workerNodeArguments(env)?.args).toEqual(["--inspect=9333", "--title=9333x"]);
  });

  it("--inspect replaces the setting's inspector flags and keeps the others", () => {
    const env = {
      languageWorkers__node__arguments: "--inspect-brk=9300 --enable-source-maps --inspect-port=1",
    };
    expect(workerNodeArguments(env, "9231")).toEqual({
      args: ["--enable-source-maps", "--inspect=9231"],
      source: "--inspect, with languageWorkers__node__arguments",
      inspector: { host: "127.0.0.1", port: 9231 },
    });
    expect(workerNodeArguments({}, true)).toEqual({
      args: ["--inspect"],
      source: "--inspect",
      inspector: { host: "127.0.0.1", port: 9229 },
    });
  });
});

describe("where node's inspector listens", () => {
  it("follows node's flags: the last address named wins, --inspect-port alone opens nothing", () => {
    expect(inspectorOf(["--inspect-port=9300"])).toBeUndefined();
    expect(inspectorOf(["--inspect-port=9300", "--inspect"])).toEqual({ host: "127.0.0.1", port: 9300 });
    expect(inspectorOf(["--inspect-brk=0.0.0.0:9400"])).toEqual({ host: "0.0.0.0", port: 9400 });
    expect(inspectorOf(["--inspect-wait=[::1]:9401"])).toEqual({ host: "::1", port: 9401 });
    expect(inspectorOf(["--inspect=9229", "--inspect=9500"])).toEqual({ host: "127.0.0.1", port: 9500 });
    expect(inspectorOf(["--inspector-nope", "--enable-source-maps"])).toBeUndefined();
  });

  it("reads [host:]port as node does", () => {
    expect(parseHostPort("0")).toEqual({ host: "127.0.0.1", port: 0 });
    expect(parseHostPort("localhost:9229")).toEqual({ host: "localhost", port: 9229 });
    expect(parseHostPort("70000")).toBeUndefined();
    expect(parseHostPort("localhost")).toEqual({ host: "localhost", port: 9229 });
  });

  it("takes a port or host:port for cosmos-feed start --inspect, and says what is wrong otherwise", () => {
    expect(parseInspectFlag(true)).toBe(true);
    expect(parseInspectFlag("9230")).toBe("9230");
    expect(parseInspectFlag("127.0.0.1:9230")).toBe("127.0.0.1:9230");
    expect(() => parseInspectFlag("99999")).toThrow(
      "--inspect takes [host:]port (e.g. --inspect=9229), not '99999'.",
    );
    expect(() => parseInspectFlag("src")).toThrow(
      "Give the app folder before the flag: cosmos-feed start . --inspect",
    );
  });
});

describe("the worker's stderr lines", () => {
  it("are logged at the level their words suggest, as the host does", () => {
    expect(stderrLevel("Debugger listening on ws://127.0.0.1:9229/0f3e")).toBe("information");
    expect(stderrLevel("For help, see: https://nodejs.org/en/docs/inspector")).toBe("information");
    expect(stderrLevel("Debugger attached.")).toBe("information");
    expect(stderrLevel("Starting inspector on 127.0.0.1:9229 failed: address already in use")).toBe("error");
    expect(stderrLevel("TypeError: x is not a function")).toBe("error");
    expect(stderrLevel("(node:1) Warning: something is deprecated")).toBe("warning");
  });
});
