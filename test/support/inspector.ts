import { readFileSync } from "node:fs";
import { SourceMap, type SourceMapPayload } from "node:module";
import { fileURLToPath } from "node:url";
import { WAIT_MS } from "../../bench/lib/until.js";
import { connectWebSocket } from "./websocket.js";

/**
 * A Chrome DevTools Protocol client for node's inspector (what VS Code's debugger speaks to `--inspect`), over a
 * real WebSocket: commands with their answers, and every event kept so a wait never misses one that came first.
 */
export interface CdpSession {
  send<T = Record<string, unknown>>(method: string, params?: object): Promise<T>;
  /** The first event `method` — already received or still to come — that `match` accepts; fails after WAIT_MS. */
  event<T>(method: string, match?: (params: T) => boolean): Promise<T>;
  /** Resolves once the connection is gone (the process behind it exited, or close()). */
  closed: Promise<void>;
  close(): void;
}

export async function connectInspector(wsUrl: string): Promise<CdpSession> {
  const socket = await connectWebSocket(wsUrl);
  let nextId = 1;
  const answers = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  const events: { method: string; params: unknown }[] = [];
  const waiters = new Set<() => void>();
  socket.onMessage((text) => {
    const m = JSON.parse(text) as {
      id?: number;
      result?: unknown;
      error?: { message: string };
      method?: string;
      params?: unknown;
    };
    if (m.id !== undefined) {
      const a = answers.get(m.id);
      answers.delete(m.id);
      if (m.error) a?.reject(new Error(m.error.message));
      else a?.resolve(m.result);
    } else if (m.method) {
      events.push({ method: m.method, params: m.params });
      for (const w of [...waiters]) w();
    }
  });
  void socket.closed.then(() => {
    for (const a of answers.values()) a.reject(new Error("the inspector connection closed"));
    answers.clear();
  });
  return {
    send: <T>(method: string, params: object = {}) =>
      new Promise<T>((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => {
          answers.delete(id);
          reject(new Error(`timed out: the inspector's answer to ${method}`));
        }, WAIT_MS);
        const settle = () => clearTimeout(timer);
        answers.set(id, {
          resolve: (v) => {
            settle();
            resolve(v as T);
          },
          reject: (e) => {
            settle();
            reject(e);
          },
        });
        socket.send(JSON.stringify({ id, method, params }));
      }),
    event: <T>(method: string, match: (params: T) => boolean = () => true) =>
      new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out: inspector event ${method}`));
        }, WAIT_MS);
        function check() {
          let e: { params: unknown } | undefined;
          try {
            e = events.find((x) => x.method === method && match(x.params as T));
          } catch (error) {
            waiters.delete(check);
            clearTimeout(timer);
            reject(error);
            return;
          }
          if (!e) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(e.params as T);
        }
        waiters.add(check);
        check();
      }),
    closed: socket.closed,
    close: () => socket.close(),
  };
}

interface ScriptParsed {
  scriptId: string;
  url: string;
  sourceMapURL?: string;
}

/** A compiled script and its source map, read as a debugger reads them (the map's URL relative to the script's). */
export interface MappedScript {
  url: string;
  map: SourceMap;
  /** The map's sources as file paths, by the source string findEntry returns. */
  sourcePath(source: string): string;
}

function loadMap(script: ScriptParsed): MappedScript | undefined {
  if (!script.sourceMapURL || !script.url.startsWith("file:") || script.url.includes("/node_modules/"))
    return undefined;
  const mapUrl = new URL(script.sourceMapURL, script.url);
  const text =
    mapUrl.protocol === "data:"
      ? Buffer.from(mapUrl.pathname.slice(mapUrl.pathname.indexOf(",") + 1), "base64").toString("utf8")
      : readFileSync(fileURLToPath(mapUrl), "utf8");
  const payload = JSON.parse(text) as SourceMapPayload;
  const root = payload.sourceRoot ? new URL(payload.sourceRoot, mapUrl) : mapUrl;
  return {
    url: script.url,
    map: new SourceMap(payload),
    sourcePath: (source) => {
      if (source.startsWith("/")) return source; // tsx's inline maps name absolute paths
      try {
        return fileURLToPath(new URL(source, root));
      } catch {
        return source; // relative to a data: URL: names no file
      }
    },
  };
}

/** Where a compiled position comes from in the sources: a file path and a 1-based line. */
export function originalPosition(
  script: MappedScript,
  location: { lineNumber: number; columnNumber?: number },
): { path: string; line: number } | undefined {
  const e = script.map.findEntry(location.lineNumber, location.columnNumber ?? 0) as {
    originalSource?: string;
    originalLine?: number;
  };
  if (e.originalSource === undefined || e.originalLine === undefined) return undefined;
  return { path: script.sourcePath(e.originalSource), line: e.originalLine + 1 };
}

/**
 * A breakpoint at line `line` (1-based) of the TypeScript file `tsPath`, set as VS Code's debugger sets one: the
 * compiled script whose source map names that file (from Debugger.scriptParsed), the first compiled position the
 * map takes to that line, then Debugger.setBreakpointByUrl there. Debugger.enable must have been sent.
 */
export async function setBreakpointInSource(
  cdp: CdpSession,
  tsPath: string,
  line: number,
): Promise<{ script: MappedScript; locations: { lineNumber: number; columnNumber: number }[] }> {
  let script: MappedScript | undefined;
  await cdp.event<ScriptParsed>("Debugger.scriptParsed", (s) => {
    const mapped = loadMap(s);
    if (mapped?.map.payload.sources.some((src) => mapped.sourcePath(src) === tsPath)) script = mapped;
    return script !== undefined;
  });
  const found = script as MappedScript;
  const compiled = readFileSync(fileURLToPath(found.url), "utf8").split("\n");
  let at: { lineNumber: number; columnNumber: number } | undefined;
  for (let g = 0; g < compiled.length && !at; g++) {
    for (let c = 0; c <= compiled[g].length && !at; c++) {
      const o = originalPosition(found, { lineNumber: g, columnNumber: c });
      if (o?.path === tsPath && o.line === line) at = { lineNumber: g, columnNumber: c };
    }
  }
  if (!at) throw new Error(`The source map of ${found.url} maps nothing to ${tsPath}:${line}.`);
  const urlRegex = `${found.url.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`;
  const { locations } = await cdp.send<{ locations: { lineNumber: number; columnNumber: number }[] }>(
    "Debugger.setBreakpointByUrl",
    { urlRegex, ...at },
  );
  return { script: found, locations };
}
