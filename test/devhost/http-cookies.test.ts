/**
 * Cookies a non-streaming HTTP function returns: the host turns each RpcHttpCookie into ASP.NET Core CookieOptions
 * and appends it, so every cookie is its own `Set-Cookie` header whose attributes come in SetCookieHeaderValue's
 * order (expires, max-age, domain, path, secure, samesite, httponly) and a path of "/" when the cookie gives none
 * (CookieOptions' default). The cookies are those of the httpCookies function of Microsoft's Node worker e2e app
 * (Azure/azure-functions-nodejs-e2e-tests, app/v4), and the joined value is what its http.test.ts "Cookies" expects
 * when the host converts the response (without the library's HTTP streaming, which writes cookies itself).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningDevHost, startDevHost } from "../../packages/devhost/src/index.js";
import { scratchApps } from "../support/scratch-apps.js";

const apps = scratchApps("cookies-");
let host: RunningDevHost;

const APP = `const { app } = require("@azure/functions");
app.http("httpCookies", {
  methods: ["GET"],
  authLevel: "anonymous",
  handler: () => ({
    cookies: [
      { name: "mycookie", value: "myvalue", maxAge: 200000 },
      { name: "mycookie2", value: "myvalue", path: "/", maxAge: "200000" },
      { name: "mycookie3-expires", value: "myvalue3-expires", maxAge: 0 },
      { name: "mycookie4-samesite-lax", value: "myvalue", sameSite: "Lax" },
      { name: "mycookie5-samesite-strict", value: "myvalue", sameSite: "Strict" },
    ],
  }),
});
app.http("everyAttribute", {
  methods: ["GET"],
  handler: () => ({
    cookies: [
      { name: "all", value: "v", httpOnly: true, sameSite: "None", secure: true, path: "/p", domain: "example.com", maxAge: 60, expires: new Date(Date.UTC(2030, 0, 2, 3, 4, 5)) },
      { name: "plain", value: "" },
    ],
  }),
});
`;

beforeAll(async () => {
  const appDir = apps.write({ "package.json": JSON.stringify({ main: "index.js" }), "index.js": APP });
  host = await startDevHost({ appDir, port: 0, logSink: () => {} });
});

afterAll(async () => {
  await host?.close();
  apps.removeAll();
});

describe("Set-Cookie of a non-streaming function", () => {
  it("one header per cookie, as Microsoft's e2e test expects them", async () => {
    const res = await fetch(`${host.baseUrl}/api/httpCookies`);
    expect(res.status).toBe(200);
    expect(res.headers.getSetCookie()).toEqual([
      "mycookie=myvalue; max-age=200000; path=/",
      "mycookie2=myvalue; max-age=200000; path=/",
      "mycookie3-expires=myvalue3-expires; max-age=0; path=/",
      "mycookie4-samesite-lax=myvalue; path=/; samesite=lax",
      "mycookie5-samesite-strict=myvalue; path=/; samesite=strict",
    ]);
    // The e2e test reads them joined (node-fetch's headers.get).
    expect(res.headers.get("set-cookie")).toBe(
      "mycookie=myvalue; max-age=200000; path=/, mycookie2=myvalue; max-age=200000; path=/, mycookie3-expires=myvalue3-expires; max-age=0; path=/, mycookie4-samesite-lax=myvalue; path=/; samesite=lax, mycookie5-samesite-strict=myvalue; path=/; samesite=strict",
    );
  });

  it("every attribute in ASP.NET Core's order; sameSite 'None' is written as samesite=none", async () => {
    const res = await fetch(`${host.baseUrl}/api/everyAttribute`);
    expect(res.headers.getSetCookie()).toEqual([
      "all=v; expires=Wed, 02 Jan 2030 03:04:05 GMT; max-age=60; domain=example.com; path=/p; secure; samesite=none; httponly",
      "plain=; path=/",
    ]);
  });
});
