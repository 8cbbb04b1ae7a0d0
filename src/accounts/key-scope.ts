import { GatewayError } from '../core/gateway-error.ts';
import { type ApiKeyRecord, NO_KEY_CONTROLS } from '../core/records.ts';

/**
 * Whether a key carries a restriction: a spending limit, an expiry, a list of allowed models or an IP
 * allow-list. Such a key calls models and reads its account, but never manages it: whoever holds a key
 * handed out with a USD 5 limit must not be able to lift the limit or mint an unlimited key.
 */
export function isRestrictedKey(key: ApiKeyRecord): boolean {
  const controls = key.controls ?? NO_KEY_CONTROLS;
  return (
    controls.spendLimitMicros !== null ||
    controls.expiresAt !== null ||
    controls.allowedModels !== null ||
    (key.allowedIps !== null && key.allowedIps.length > 0)
  );
}

/** The refusal a restricted key gets on a management route (403 permission_error). */
export function managementRefusal(): GatewayError {
  return new GatewayError(
    'forbidden',
    'this API key has restrictions (a spending limit, an expiry, allowed models or an IP allow-list), so it may call models and read the account but not manage it: use the dashboard or an API key without restrictions to create, change, rotate or revoke keys, or to change the webhook endpoint, billing or the account',
  );
}
