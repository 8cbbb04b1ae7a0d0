import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { createSecretBox, type SecretBox } from '../shared/secret-box.ts';
import { GatewayError } from '../core/gateway-error.ts';

/**
 * Responses output items whose id carries the item itself, compressed and sealed (AES-256-GCM under
 * TOLLGATE_SECRET_KEY, opened with it or a TOLLGATE_SECRET_KEY_PREVIOUS), so a client that sends earlier output
 * back as `item_reference` (what `store: true`, the default of most clients, does) gets it resolved without
 * Tollgate storing anything. The sealed payload names the account, so one account's ids do not open for another.
 */

/** What an earlier answer's item was, as much of it as a later prompt needs. */
export type SealedItem =
  | { type: 'message'; text: string }
  | { type: 'function_call'; call_id: string; name: string; arguments: string };

export interface ItemSeal {
  /** An id carrying `item` for `accountId`; a plain random id when no key is set or the item is too large. */
  idFor(prefix: string, accountId: string, item: SealedItem): string;
  /** The item an `item_reference` names; a 400 (param `at`) for an id that is not one this account was given. */
  open(id: unknown, accountId: string, at: string): SealedItem;
}

/**
 * The longest id an item is carried in. A client sends each id back with every later turn, so an answer
 * of many pages would make each request that much larger; past this its id is a plain one (see `open`).
 */
export const MAX_SEALED_ID_CHARS = 48 * 1024;

/** Marks a sealed id after its prefix (`msg_`), ahead of the key id, IV, tag and ciphertext. */
const MARK = 'tg1.';
const BOX_PREFIX = 'enc:v1:';

const randomId = (prefix: string): string => `${prefix}_${randomBytes(12).toString('hex')}`;

const invalid = (message: string, at: string): GatewayError =>
  new GatewayError('invalid_request', message, { param: at });

export function createItemSeal(keys: { current: string; previous: readonly string[] } | undefined): ItemSeal {
  const box: SecretBox | undefined = keys === undefined ? undefined : createSecretBox(keys);
  return {
    idFor(prefix, accountId, item) {
      if (box === undefined) return randomId(prefix);
      const packed = deflateRawSync(Buffer.from(JSON.stringify({ a: accountId, i: item }), 'utf8'));
      const sealed = box.seal(packed.toString('base64url'));
      const id = `${prefix}_${MARK}${sealed.slice(BOX_PREFIX.length).replaceAll(':', '.')}`;
      return id.length <= MAX_SEALED_ID_CHARS ? id : randomId(prefix);
    },
    open(id, accountId, at) {
      if (typeof id !== 'string' || id === '')
        throw invalid(`${at}: an item_reference needs the id of an item`, `${at}.id`);
      const underscore = id.indexOf('_');
      const body = underscore < 0 ? '' : id.slice(underscore + 1);
      if (!body.startsWith(MARK))
        throw invalid(
          `${at}: item ${JSON.stringify(id.slice(0, 80))} cannot be resolved: Tollgate stores no items, and only items of whole (not streamed) answers up to ${MAX_SEALED_ID_CHARS} characters carry themselves in their id; send the item itself (or set store: false)`,
          `${at}.id`,
        );
      if (box === undefined)
        throw invalid(
          `${at}: item references cannot be opened: this server has no TOLLGATE_SECRET_KEY; send the item itself`,
          `${at}.id`,
        );
      let payload: unknown;
      try {
        const packed = box.open(BOX_PREFIX + body.slice(MARK.length).replaceAll('.', ':'));
        payload = JSON.parse(inflateRawSync(Buffer.from(packed, 'base64url')).toString('utf8'));
      } catch {
        payload = undefined;
      }
      const item = isPayload(payload) && payload.a === accountId ? payload.i : undefined;
      if (item === undefined)
        throw invalid(
          `${at}: item ${JSON.stringify(id.slice(0, 80))} is not an item this account was given (altered, from another account, or sealed with a key no longer configured)`,
          `${at}.id`,
        );
      return item;
    },
  };
}

function isPayload(value: unknown): value is { a: string; i: SealedItem } {
  if (typeof value !== 'object' || value === null) return false;
  const { a, i } = value as { a?: unknown; i?: unknown };
  if (typeof a !== 'string' || typeof i !== 'object' || i === null) return false;
  const item = i as Record<string, unknown>;
  if (item['type'] === 'message') return typeof item['text'] === 'string';
  return (
    item['type'] === 'function_call' &&
    typeof item['call_id'] === 'string' &&
    typeof item['name'] === 'string' &&
    typeof item['arguments'] === 'string'
  );
}
