/**
 * The deepest nesting of objects and arrays in JSON text (brackets outside strings), in one linear pass without
 * recursion: run before JSON.parse, so text nested 10,000 deep is refused before anything recursive walks it.
 * Shared by the app's request bodies and the emulator's.
 */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // a backslash escapes the next character (\" does not end the string)
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x7b || ch === 0x5b) {
      if (++depth > max) max = depth;
    } else if (ch === 0x7d || ch === 0x5d) depth--;
  }
  return max;
}
