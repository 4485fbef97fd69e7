import { describe, expect, it } from "vitest";
import { comparePrecedence, compileRoute, matchRoute } from "../../packages/devhost/src/http/routes.js";

const match = (template: string, path: string) =>
  matchRoute(compileRoute(template), path.split("/").filter(Boolean));

describe("route templates (ASP.NET Core routing as the Functions host uses it)", () => {
  it("matches literals case-insensitively and binds decoded parameters", () => {
    expect(match("subscriptions/{sub}/resources/{name}", "Subscriptions/s%201/RESOURCES/r1")).toEqual({
      sub: "s 1",
      name: "r1",
    });
    expect(match("subscriptions/{sub}", "subscriptions/s1/extra")).toBeUndefined();
    expect(match("subscriptions/{sub}", "subscriptions")).toBeUndefined();
  });

  it("applies constraints", () => {
    expect(match("items/{id:int}", "items/42")).toEqual({ id: "42" });
    expect(match("items/{id:int}", "items/4x")).toBeUndefined();
    expect(match("items/{id:int}", "items/99999999999")).toBeUndefined(); // beyond int32
    expect(match("items/{id:long}", "items/99999999999")).toEqual({ id: "99999999999" });
    expect(match("n/{n:alpha}", "n/abc")).toEqual({ n: "abc" });
    expect(match("n/{n:alpha}", "n/ab1")).toBeUndefined();
    expect(match("g/{g:guid}", "g/0f8fad5b-d9cb-469f-a165-70867728950e")).toBeDefined();
    expect(match("g/{g:guid}", "g/nope")).toBeUndefined();
    expect(match("b/{b:bool}", "b/TRUE")).toEqual({ b: "TRUE" });
    expect(match("r/{r:range(1,5)}", "r/5")).toEqual({ r: "5" });
    expect(match("r/{r:range(1,5)}", "r/6")).toBeUndefined();
    expect(match("l/{s:minlength(3):maxlength(4)}", "l/abcd")).toEqual({ s: "abcd" });
    expect(match("l/{s:minlength(3):maxlength(4)}", "l/ab")).toBeUndefined();
    expect(match("x/{s:regex(^[a-z]{{2}}\\d$)}", "x/ab1")).toBeDefined();
    expect(match("x/{s:regex(^a:b$)}", "x/a:b")).toEqual({ s: "a:b" });
  });

  it("handles optional parameters, defaults, catch-alls and complex segments", () => {
    expect(match("opt/{x?}", "opt")).toEqual({});
    expect(match("opt/{x?}", "opt/1")).toEqual({ x: "1" });
    expect(match("def/{x=7}", "def")).toEqual({ x: "7" });
    expect(match("files/{*path}", "files/a/b%2Fc")).toEqual({ path: "a/b/c" });
    expect(match("files/{*path}", "files")).toEqual({});
    expect(match("files/{**path}", "files/a/b")).toEqual({ path: "a/b" });
    expect(match("dl/{name}.{ext}", "dl/report.v2.pdf")).toEqual({ name: "report", ext: "v2.pdf" });
  });

  it("refuses unknown constraints and misplaced catch-alls", () => {
    expect(() => compileRoute("a/{x:nope}")).toThrow(/constraint reference 'nope' could not be resolved/);
    expect(() => compileRoute("a/{*x}/b")).toThrow(/catch-all/);
    expect(() => compileRoute("a/{1x}")).toThrow(/not a valid parameter/);
  });

  it("orders literals before constrained, plain and catch-all parameters", () => {
    const templates = ["items/{*rest}", "items/{id}", "items/{id:int}", "items/special"];
    const sorted = templates.map(compileRoute).sort(comparePrecedence);
    expect(sorted.map((r) => r.template)).toEqual([
      "items/special",
      "items/{id:int}",
      "items/{id}",
      "items/{*rest}",
    ]);
  });
});
