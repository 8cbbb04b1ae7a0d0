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

/**
 * The Standard Webhooks `webhook-signature` value: `v1,` and the base64 HMAC-SHA256 of `id.timestamp.payload`,
 * keyed with the secret's bytes (what follows `whsec_`, base64-decoded). Secrets made before they were
 * standard base64 are base64url; Node decodes both alphabets to the same bytes.
 */
export function signStandard(id: string, timestampSeconds: number, payload: string, secret: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${payload}`).digest('base64');
  return `v1,${mac}`;
}
