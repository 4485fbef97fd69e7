// A reader for the YAML that azure.yaml is written in: nested block mappings of plain, quoted or boolean scalars,
// with comments. Anything else (sequences, flow collections, anchors, block scalars) is an error naming its line, so
// that azure.yaml cannot grow a construct this reader would get wrong without the test saying so.
export type YamlValue = string | boolean | YamlMapping;
export interface YamlMapping {
  [key: string]: YamlValue;
}

function scalar(text: string, line: number): string | boolean {
  if (text === "true" || text === "false") return text === "true";
  const quoted = /^"((?:[^"\\]|\\.)*)"$/.exec(text) ?? /^'((?:[^']|'')*)'$/.exec(text);
  if (quoted) return text.startsWith('"') ? JSON.parse(text) : (quoted[1] as string).replace(/''/g, "'");
  if (/^[[{&*|>!%@`-]/.test(text)) throw new Error(`azure.yaml:${line}: '${text}' is not a plain scalar`);
  return text;
}

export function parseYamlMappings(text: string): YamlMapping {
  const root: YamlMapping = {};
  const stack: { indent: number; map: YamlMapping }[] = [{ indent: -1, map: root }];
  text.split("\n").forEach((raw, i) => {
    const line = i + 1;
    const content = raw.replace(/\s+#.*$/, "").replace(/^\s*#.*$/, "");
    if (content.trim() === "") return;
    const indent = content.length - content.trimStart().length;
    const match = /^([A-Za-z0-9_.-]+):(?:\s+(.*))?$/.exec(content.trim());
    if (!match) throw new Error(`azure.yaml:${line}: not a 'key: value' line: ${raw.trim()}`);
    while ((stack.at(-1)?.indent ?? -1) >= indent) stack.pop();
    const parent = stack.at(-1)?.map as YamlMapping;
    const key = match[1] as string;
    if (key in parent) throw new Error(`azure.yaml:${line}: '${key}' appears twice`);
    if (match[2] === undefined || match[2] === "") {
      const child: YamlMapping = {};
      parent[key] = child;
      stack.push({ indent, map: child });
    } else {
      parent[key] = scalar(match[2].trim(), line);
    }
  });
  return root;
}
