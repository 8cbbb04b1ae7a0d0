import { redactSecrets } from '../shared/redact-secrets.ts';

const MAX_LENGTH = 300;

/**
 * An upstream's error text as a client may read it: secrets and URLs removed, the upstream's model name
 * replaced by the public one, control characters flattened, at most 300 characters. The full text stays in
 * the error's cause, for the (redacted) server log.
 */
export function sanitizeUpstreamMessage(message: string, upstreamModel: string, publicModel: string): string {
  // An echoed header block goes whole, before anything else: its names say how Tollgate calls the upstream.
  let text = redactSecrets(message.replace(/\bheaders?["']?\s*[:=]?\s*\{[^}]*\}?/gi, 'headers: [removed]'))
    .replace(/\p{Cc}+/gu, ' ')
    .replace(/\bhttps?:\/\/[^\s"'<>]+/gi, '[url]');
  if (upstreamModel && upstreamModel !== publicModel)
    text = text
      .split(upstreamModel)
      .join(publicModel)
      .replace(new RegExp(escape(upstreamModel), 'gi'), publicModel);
  text = text.trim();
  return text.length > MAX_LENGTH ? `${text.slice(0, MAX_LENGTH)}…` : text || 'no detail given';
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
