/**
 * The knobs of the emulator's generated certificate (see certificate.ts), named once. They are not app settings:
 * the certificate is made by `cosmos-feed start` (and `cosmos-feed emulator --tls auto`), not by the app. See
 * docs/emulator.md ("HTTPS").
 */
export const CERTIFICATE = {
  /**
   * Days a generated certificate is valid. Under Apple's limit for TLS server certificates (825 days), so that
   * macOS accepts it once trusted; renewed by the next start when it is close to the end (`renewBeforeDays`).
   */
  lifetimeDays: 365,
  /** A start renews the stored certificate when it expires within this many days (trusting it again is needed). */
  renewBeforeDays: 30,
  /** Its notBefore is this many minutes in the past, so that a client clock a little behind still accepts it. */
  backdateMinutes: 60,
} as const;
