/** What an error says: an Error's message, anything else (a thrown string, a value) as text. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
