import {
  type BinaryOp,
  type CollectionExpr,
  type Expr,
  type FromSource,
  nestingDepth,
  type Query,
  type SelectClause,
  type SortItem,
} from "./ast.js";

/**
 * A recursive-descent parser for the Cosmos DB (NoSQL) query language:
 * https://learn.microsoft.com/azure/cosmos-db/nosql/query/select (and the pages of each clause).
 * Keywords are case-insensitive, identifiers are not.
 */

/** A compile error as the service reports it (`{"errors":[{severity, location, code, message}]}`). */
export class QueryCompileError extends Error {
  constructor(
    message: string,
    readonly start: number,
    readonly end: number,
    readonly code = "SC1001",
  ) {
    super(message);
    this.name = "QueryCompileError";
  }
}

type TokenKind = "ident" | "keyword" | "number" | "string" | "param" | "punct" | "eof";
interface Token {
  kind: TokenKind;
  /** keyword: upper-cased; punct: the operator; others: the source text or decoded value. */
  text: string;
  value?: unknown;
  start: number;
  end: number;
}

const KEYWORDS = new Set([
  "SELECT",
  "FROM",
  "WHERE",
  "ORDER",
  "GROUP",
  "BY",
  "TOP",
  "AS",
  "JOIN",
  "IN",
  "VALUE",
  "ASC",
  "DESC",
  "AND",
  "OR",
  "NOT",
  "BETWEEN",
  "EXISTS",
  "ARRAY",
  "NULL",
  "TRUE",
  "FALSE",
  "UNDEFINED",
  "DISTINCT",
  "OFFSET",
  "LIMIT",
  "LIKE",
  "ESCAPE",
  "UDF",
]);

const PUNCTUATION = [
  ">>>",
  "??",
  "||",
  "<>",
  "!=",
  "<=",
  ">=",
  "<<",
  ">>",
  "(",
  ")",
  "{",
  "}",
  "[",
  "]",
  ",",
  ".",
  ":",
  "?",
  "=",
  "<",
  ">",
  "+",
  "-",
  "*",
  "/",
  "%",
  "|",
  "&",
  "^",
  "~",
];

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = src.length;
  while (i < n) {
    const ch = src.charCodeAt(i);
    // whitespace
    if (ch === 32 || ch === 9 || ch === 10 || ch === 13 || ch === 0xa0 || ch === 0xfeff) {
      i++;
      continue;
    }
    // -- line comment
    if (ch === 45 && src.charCodeAt(i + 1) === 45) {
      while (i < n && src.charCodeAt(i) !== 10) i++;
      continue;
    }
    const start = i;
    if (isIdentStart(ch)) {
      while (i < n && isIdentPart(src.charCodeAt(i))) i++;
      const text = src.slice(start, i);
      const upper = text.toUpperCase();
      tokens.push(
        KEYWORDS.has(upper)
          ? { kind: "keyword", text: upper, start, end: i }
          : { kind: "ident", text, start, end: i },
      );
      continue;
    }
    if (ch === 64 /* @ */) {
      i++;
      while (i < n && isIdentPart(src.charCodeAt(i))) i++;
      if (i === start + 1) throw new QueryCompileError("Syntax error, incorrect syntax near '@'.", start, i);
      tokens.push({ kind: "param", text: src.slice(start, i), start, end: i });
      continue;
    }
    if (isDigit(ch) || (ch === 46 && isDigit(src.charCodeAt(i + 1)))) {
      if (ch === 48 && (src[i + 1] === "x" || src[i + 1] === "X")) {
        i += 2;
        while (i < n && /[0-9a-fA-F]/.test(src[i])) i++;
        tokens.push({
          kind: "number",
          text: src.slice(start, i),
          value: Number.parseInt(src.slice(start + 2, i), 16),
          start,
          end: i,
        });
        continue;
      }
      while (i < n && isDigit(src.charCodeAt(i))) i++;
      if (src[i] === "." && isDigit(src.charCodeAt(i + 1))) {
        i++;
        while (i < n && isDigit(src.charCodeAt(i))) i++;
      }
      if (src[i] === "e" || src[i] === "E") {
        let j = i + 1;
        if (src[j] === "+" || src[j] === "-") j++;
        if (isDigit(src.charCodeAt(j))) {
          i = j;
          while (i < n && isDigit(src.charCodeAt(i))) i++;
        }
      }
      const text = src.slice(start, i);
      tokens.push({ kind: "number", text, value: Number(text), start, end: i });
      continue;
    }
    if (ch === 39 || ch === 34 /* ' " */) {
      const quote = src[i];
      i++;
      let out = "";
      for (;;) {
        if (i >= n) throw new QueryCompileError("Syntax error, unclosed quotation mark.", start, n);
        const c = src[i];
        if (c === quote) {
          i++;
          break;
        }
        if (c === "\\") {
          const e = src[i + 1];
          i += 2;
          switch (e) {
            case "b":
              out += "\b";
              break;
            case "f":
              out += "\f";
              break;
            case "n":
              out += "\n";
              break;
            case "r":
              out += "\r";
              break;
            case "t":
              out += "\t";
              break;
            case "u": {
              const hex = src.slice(i, i + 4);
              if (!/^[0-9a-fA-F]{4}$/.test(hex))
                throw new QueryCompileError("Syntax error, invalid unicode escape sequence.", i - 2, i + 4);
              out += String.fromCharCode(Number.parseInt(hex, 16));
              i += 4;
              break;
            }
            case undefined:
              throw new QueryCompileError("Syntax error, unclosed quotation mark.", start, n);
            default:
              out += e;
          }
          continue;
        }
        out += c;
        i++;
      }
      tokens.push({ kind: "string", text: src.slice(start, i), value: out, start, end: i });
      continue;
    }
    const op = PUNCTUATION.find((p) => src.startsWith(p, i));
    if (!op) throw new QueryCompileError(`Syntax error, incorrect syntax near '${src[i]}'.`, i, i + 1);
    i += op.length;
    tokens.push({ kind: "punct", text: op, start, end: i });
  }
  tokens.push({ kind: "eof", text: "", start: n, end: n });
  return tokens;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}
function isIdentStart(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c > 127;
}
function isIdentPart(c: number): boolean {
  return isIdentStart(c) || isDigit(c);
}

/** Deepest recursion of the parser itself (parentheses, unary operators, calls, subqueries). */
const MAX_DEPTH = 128;
/** Deepest nesting of the parsed tree (member and operator chains included) that later passes walk. */
const MAX_TREE_DEPTH = 256;

export function parseQuery(text: string): Query {
  const q = new Parser(text).parseProgram();
  if (nestingDepth(q) > MAX_TREE_DEPTH) {
    throw new QueryCompileError(
      `The query is too complex: its expressions nest more than ${MAX_TREE_DEPTH} levels deep.`,
      0,
      text.length,
      "SC1002",
    );
  }
  return q;
}

class Parser {
  private readonly tokens: Token[];
  private pos = 0;
  private depth = 0;

  constructor(private readonly src: string) {
    this.tokens = tokenize(src);
  }

  parseProgram(): Query {
    const q = this.parseSelect();
    if (this.peek().kind !== "eof") this.fail();
    return q;
  }

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.pos + offset, this.tokens.length - 1)];
  }
  private next(): Token {
    const t = this.tokens[this.pos];
    if (this.pos < this.tokens.length - 1) this.pos++;
    return t;
  }
  private isKeyword(word: string, offset = 0): boolean {
    const t = this.peek(offset);
    return t.kind === "keyword" && t.text === word;
  }
  private isPunct(p: string, offset = 0): boolean {
    const t = this.peek(offset);
    return t.kind === "punct" && t.text === p;
  }
  private acceptKeyword(word: string): boolean {
    if (!this.isKeyword(word)) return false;
    this.pos++;
    return true;
  }
  private acceptPunct(p: string): boolean {
    if (!this.isPunct(p)) return false;
    this.pos++;
    return true;
  }
  private expectKeyword(word: string): void {
    if (!this.acceptKeyword(word)) this.fail();
  }
  private expectPunct(p: string): void {
    if (!this.acceptPunct(p)) this.fail();
  }
  private fail(t: Token = this.peek()): never {
    const near = t.kind === "eof" ? "end of input" : `'${this.src.slice(t.start, t.end)}'`;
    throw new QueryCompileError(`Syntax error, incorrect syntax near ${near}.`, t.start, t.end);
  }
  private enter(): void {
    if (++this.depth > MAX_DEPTH) {
      const t = this.peek();
      throw new QueryCompileError(
        `The query nests expressions more than ${MAX_DEPTH} levels deep.`,
        t.start,
        t.end,
        "SC1002",
      );
    }
  }
  private leave(): void {
    this.depth--;
  }

  private parseSelect(): Query {
    this.enter();
    this.expectKeyword("SELECT");
    let distinct = false;
    let top: Expr | undefined;
    // The service accepts DISTINCT and TOP in either order.
    for (;;) {
      if (!distinct && this.acceptKeyword("DISTINCT")) distinct = true;
      else if (!top && this.acceptKeyword("TOP")) top = this.parseCount();
      else break;
    }
    const select = this.parseSelectClause();
    const q: Query = { distinct, top, select, from: [] };
    if (this.acceptKeyword("FROM")) q.from = this.parseFrom();
    if (this.acceptKeyword("WHERE")) q.where = this.parseExpr();
    if (this.isKeyword("GROUP")) {
      this.next();
      this.expectKeyword("BY");
      q.groupBy = [this.parseExpr()];
      while (this.acceptPunct(",")) q.groupBy.push(this.parseExpr());
    }
    if (this.isKeyword("ORDER")) {
      this.next();
      this.expectKeyword("BY");
      q.orderBy = [this.parseSortItem()];
      while (this.acceptPunct(",")) q.orderBy.push(this.parseSortItem());
    }
    if (this.acceptKeyword("OFFSET")) {
      q.offset = this.parseCount();
      this.expectKeyword("LIMIT");
      q.limit = this.parseCount();
    }
    this.leave();
    return q;
  }

  /** TOP / OFFSET / LIMIT take a non-negative integer literal or a parameter. */
  private parseCount(): Expr {
    const t = this.next();
    if (t.kind === "param") return { k: "param", name: t.text };
    if (t.kind === "number" && Number.isInteger(t.value) && !t.text.includes("."))
      return { k: "lit", value: t.value };
    this.fail(t);
  }

  private parseSelectClause(): SelectClause {
    if (this.acceptPunct("*")) return { kind: "star" };
    if (this.acceptKeyword("VALUE")) return { kind: "value", expr: this.parseExpr() };
    const items: { expr: Expr; alias?: string }[] = [];
    do {
      const expr = this.parseExpr();
      let alias: string | undefined;
      if (this.acceptKeyword("AS")) alias = this.parseIdentifier();
      else if (this.peek().kind === "ident") alias = this.parseIdentifier();
      items.push({ expr, alias });
    } while (this.acceptPunct(","));
    return { kind: "list", items };
  }

  private parseIdentifier(): string {
    const t = this.next();
    if (t.kind !== "ident") this.fail(t);
    return t.text;
  }

  private parseFrom(): FromSource[] {
    const sources = [this.parseFromSource(true)];
    while (this.acceptKeyword("JOIN")) sources.push(this.parseFromSource(false));
    return sources;
  }

  private parseFromSource(first: boolean): FromSource {
    // `alias IN collection`
    if (this.peek().kind === "ident" && this.isKeyword("IN", 1)) {
      const alias = this.parseIdentifier();
      this.next();
      return { alias, iterate: true, expr: this.parseCollection(first) };
    }
    const expr = this.parseCollection(first);
    let alias: string | undefined;
    if (this.acceptKeyword("AS")) alias = this.parseIdentifier();
    else if (this.peek().kind === "ident") alias = this.parseIdentifier();
    if (alias === undefined) {
      if (expr.k === "root") alias = expr.name;
      else if (expr.k === "path" && typeof expr.prop === "string") alias = expr.prop;
      else {
        const t = this.peek();
        throw new QueryCompileError(
          "An alias is required for this FROM/JOIN source.",
          t.start,
          t.end,
          "SC2001",
        );
      }
    }
    return { alias, iterate: false, expr };
  }

  private parseCollection(first: boolean): CollectionExpr {
    let base: CollectionExpr;
    if (this.isPunct("(")) {
      this.next();
      base = { k: "subquery", query: this.parseSelect() };
      this.expectPunct(")");
      return base;
    }
    const t = this.next();
    if (t.kind === "ident") base = { k: "root", name: t.text };
    else if (first && t.kind === "keyword" && t.text === "ROOT") base = { k: "root", name: "root" };
    else this.fail(t);
    for (;;) {
      if (this.acceptPunct(".")) {
        base = { k: "path", base, prop: this.parsePropertyName() };
      } else if (this.isPunct("[")) {
        this.next();
        const p = this.next();
        if (p.kind === "string") base = { k: "path", base, prop: p.value as string };
        else if (p.kind === "number" && Number.isInteger(p.value))
          base = { k: "path", base, prop: p.value as number };
        else this.fail(p);
        this.expectPunct("]");
      } else return base;
    }
  }

  /** After `.`: any identifier, keywords included (`c.value`, `c.order`). */
  private parsePropertyName(): string {
    const t = this.next();
    if (t.kind === "ident") return t.text;
    if (t.kind === "keyword") return this.src.slice(t.start, t.end);
    this.fail(t);
  }

  private parseSortItem(): SortItem {
    const expr = this.parseExpr();
    if (this.acceptKeyword("DESC")) return { expr, desc: true, explicit: true };
    if (this.acceptKeyword("ASC")) return { expr, desc: false, explicit: true };
    return { expr, desc: false, explicit: false };
  }

  // ---- scalar expressions, lowest precedence first ----

  parseExpr(): Expr {
    this.enter();
    const e = this.parseConditional();
    this.leave();
    return e;
  }

  private parseConditional(): Expr {
    const test = this.parseCoalesce();
    if (!this.acceptPunct("?")) return test;
    const then = this.parseExpr();
    this.expectPunct(":");
    const otherwise = this.parseExpr();
    return { k: "cond", test, then, else: otherwise };
  }

  private parseCoalesce(): Expr {
    let left = this.parseOr();
    while (this.acceptPunct("??")) left = { k: "binary", op: "??", left, right: this.parseOr() };
    return left;
  }

  private parseOr(): Expr {
    const first = this.parseAnd();
    if (!this.isKeyword("OR")) return first;
    const terms = [first];
    while (this.acceptKeyword("OR")) terms.push(this.parseAnd());
    return { k: "logical", op: "OR", terms };
  }

  private parseAnd(): Expr {
    const first = this.parseNot();
    if (!this.isKeyword("AND")) return first;
    const terms = [first];
    while (this.acceptKeyword("AND")) terms.push(this.parseNot());
    return { k: "logical", op: "AND", terms };
  }

  private parseNot(): Expr {
    if (this.isKeyword("NOT") && !this.isKeyword("EXISTS", 1)) {
      this.next();
      this.enter();
      const arg = this.parseNot();
      this.leave();
      return { k: "unary", op: "NOT", arg };
    }
    return this.parseComparison();
  }

  private parseComparison(): Expr {
    let left = this.parseBitOr();
    for (;;) {
      const t = this.peek();
      if (t.kind === "punct" && ["=", "!=", "<>", "<", "<=", ">", ">="].includes(t.text)) {
        this.next();
        const op = (t.text === "<>" ? "!=" : t.text) as BinaryOp;
        left = { k: "binary", op, left, right: this.parseBitOr() };
        continue;
      }
      const not =
        this.isKeyword("NOT") &&
        (this.isKeyword("IN", 1) || this.isKeyword("BETWEEN", 1) || this.isKeyword("LIKE", 1));
      if (not) this.next();
      if (this.acceptKeyword("IN")) {
        this.expectPunct("(");
        const list = [this.parseExpr()];
        while (this.acceptPunct(",")) list.push(this.parseExpr());
        this.expectPunct(")");
        left = { k: "in", value: left, list, not };
      } else if (this.acceptKeyword("BETWEEN")) {
        const low = this.parseBitOr();
        this.expectKeyword("AND");
        const high = this.parseBitOr();
        left = { k: "between", value: left, low, high, not };
      } else if (this.acceptKeyword("LIKE")) {
        const pattern = this.parseBitOr();
        const escapeChar = this.acceptKeyword("ESCAPE") ? this.parseBitOr() : undefined;
        left = { k: "like", value: left, pattern, escape: escapeChar, not };
      } else {
        if (not) this.fail();
        return left;
      }
    }
  }

  private binaryLevel(ops: string[], next: () => Expr): Expr {
    let left = next();
    for (;;) {
      const t = this.peek();
      if (t.kind !== "punct" || !ops.includes(t.text)) return left;
      this.next();
      left = { k: "binary", op: t.text as BinaryOp, left, right: next() };
    }
  }

  private parseBitOr(): Expr {
    return this.binaryLevel(["|"], () => this.parseBitXor());
  }
  private parseBitXor(): Expr {
    return this.binaryLevel(["^"], () => this.parseBitAnd());
  }
  private parseBitAnd(): Expr {
    return this.binaryLevel(["&"], () => this.parseShift());
  }
  private parseShift(): Expr {
    return this.binaryLevel(["<<", ">>", ">>>"], () => this.parseConcat());
  }
  private parseConcat(): Expr {
    return this.binaryLevel(["||"], () => this.parseAdditive());
  }
  private parseAdditive(): Expr {
    return this.binaryLevel(["+", "-"], () => this.parseMultiplicative());
  }
  private parseMultiplicative(): Expr {
    return this.binaryLevel(["*", "/", "%"], () => this.parseUnary());
  }

  private parseUnary(): Expr {
    const t = this.peek();
    if (t.kind === "punct" && (t.text === "-" || t.text === "+" || t.text === "~")) {
      this.next();
      this.enter();
      const arg = this.parseUnary();
      this.leave();
      // Fold negative literals so `-1` stays a literal (TOP/IN lists, the plan's printed text).
      if (t.text === "-" && arg.k === "lit" && typeof arg.value === "number")
        return { k: "lit", value: -arg.value };
      return { k: "unary", op: t.text as "-" | "+" | "~", arg };
    }
    if (this.isKeyword("NOT")) {
      this.next();
      this.enter();
      const arg = this.parseUnary();
      this.leave();
      return { k: "unary", op: "NOT", arg };
    }
    return this.parsePostfix(this.parsePrimary());
  }

  private parsePostfix(base: Expr): Expr {
    let e = base;
    for (;;) {
      if (this.acceptPunct(".")) {
        e = { k: "member", obj: e, prop: { k: "lit", value: this.parsePropertyName() }, computed: false };
      } else if (this.acceptPunct("[")) {
        const prop = this.parseExpr();
        this.expectPunct("]");
        e = { k: "member", obj: e, prop, computed: true };
      } else return e;
    }
  }

  private parsePrimary(): Expr {
    const t = this.next();
    switch (t.kind) {
      case "number":
      case "string":
        return { k: "lit", value: t.value };
      case "param":
        return { k: "param", name: t.text };
      case "ident":
        if (this.isPunct("(")) return this.parseCall(t.text.toUpperCase(), false);
        return { k: "ref", name: t.text };
      case "keyword":
        switch (t.text) {
          case "TRUE":
            return { k: "lit", value: true };
          case "FALSE":
            return { k: "lit", value: false };
          case "NULL":
            return { k: "lit", value: null };
          case "UNDEFINED":
            return { k: "lit", value: undefined };
          case "ARRAY":
          case "EXISTS": {
            this.expectPunct("(");
            const query = this.parseSelect();
            this.expectPunct(")");
            return { k: "subquery", mode: t.text === "ARRAY" ? "array" : "exists", query };
          }
          case "UDF": {
            this.expectPunct(".");
            const name = this.parseIdentifier();
            return this.parseCall(name, true);
          }
          default:
            // Built-ins whose names are keywords elsewhere (e.g. LEFT is not one; IS_* are identifiers).
            return this.fail(t);
        }
      case "punct":
        if (t.text === "(") {
          if (this.isKeyword("SELECT")) {
            const query = this.parseSelect();
            this.expectPunct(")");
            return { k: "subquery", mode: "scalar", query };
          }
          const inner = this.parseExpr();
          this.expectPunct(")");
          return inner;
        }
        if (t.text === "[") {
          const items: Expr[] = [];
          if (!this.acceptPunct("]")) {
            do items.push(this.parseExpr());
            while (this.acceptPunct(","));
            this.expectPunct("]");
          }
          return { k: "array", items };
        }
        if (t.text === "{") {
          const props: { key: string; value: Expr }[] = [];
          if (!this.acceptPunct("}")) {
            do {
              const kt = this.next();
              let key: string;
              if (kt.kind === "string") key = kt.value as string;
              else if (kt.kind === "ident" || kt.kind === "keyword") key = this.src.slice(kt.start, kt.end);
              else this.fail(kt);
              this.expectPunct(":");
              props.push({ key, value: this.parseExpr() });
            } while (this.acceptPunct(","));
            this.expectPunct("}");
          }
          return { k: "object", props };
        }
        return this.fail(t);
      default:
        return this.fail(t);
    }
  }

  private parseCall(name: string, udf: boolean): Expr {
    this.expectPunct("(");
    const args: Expr[] = [];
    if (!this.acceptPunct(")")) {
      do args.push(this.parseExpr());
      while (this.acceptPunct(","));
      this.expectPunct(")");
    }
    return { k: "call", name, args, udf };
  }
}
