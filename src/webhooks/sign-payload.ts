import { createHmac, timingSafeEqual } from 'node:crypto';

/** The spec's signature header value: `sha256=` and the lowercase hex HMAC-SHA256 of the exact payload text. */
export function signPayload(payload: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(payload).digest('hex')}`;
}

/** What a receiver does: recompute and compare in constant time. */
export function verifySignature(payload: string, secret: string, header: string | undefined): boolean {
  if (!header) return false;
  const expected = Buffer.from(signPayload(payload, secret));
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
