/**
 * The few ASN.1 DER encodings an X.509 v3 certificate needs (ITU-T X.690): enough to write the emulator's
 * self-signed certificate with node:crypto alone, without openssl on PATH or a dependency.
 */

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** One tag-length-value. */
export function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), length(content.length), content]);
}

export const sequence = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
export const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
/** `[n] EXPLICIT`: a constructed context-specific tag around one value. */
export const explicit = (n: number, value: Buffer): Buffer => tlv(0xa0 | n, value);
/** `[n] IMPLICIT` of a primitive value (a GeneralName's dNSName is [2], its iPAddress [7]). */
export const implicit = (n: number, content: Buffer): Buffer => tlv(0x80 | n, content);
export const nullValue = (): Buffer => Buffer.from([0x05, 0x00]);
export const boolean = (value: boolean): Buffer => tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
export const octetString = (content: Buffer): Buffer => tlv(0x04, content);
export const utf8String = (text: string): Buffer => tlv(0x0c, Buffer.from(text, "utf8"));
/** A BIT STRING of whole bytes, or with `unusedBits` low bits of the last byte unused. */
export const bitString = (content: Buffer, unusedBits = 0): Buffer =>
  tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), content]));

/** A non-negative INTEGER from its big-endian bytes (a leading 0x00 added when the top bit is set). */
export function unsignedInteger(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return tlv(0x02, trimmed[0] & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

export const smallInteger = (n: number): Buffer => unsignedInteger(Buffer.from([n]));

/** An OBJECT IDENTIFIER from its dotted form. */
export function oid(dotted: string): Buffer {
  const arcs = dotted.split(".").map(Number);
  const bytes: number[] = [40 * arcs[0] + arcs[1]];
  for (const arc of arcs.slice(2)) {
    const base128: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) base128.unshift(0x80 | (v & 0x7f));
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050; seconds, in UTC. */
export function time(at: Date): Buffer {
  const iso = at.toISOString(); // 2026-12-01T21:19:18.123Z
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  return at.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(digits.slice(2), "ascii"))
    : tlv(0x18, Buffer.from(digits, "ascii"));
}
