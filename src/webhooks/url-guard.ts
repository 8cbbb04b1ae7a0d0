import { lookup } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { GatewayError } from '../shared/gateway-error.ts';

// Where a webhook must never go: loopback, private, link-local (cloud metadata included), CGNAT, multicast.
const FORBIDDEN = new BlockList();
for (const [network, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  FORBIDDEN.addSubnet(network, bits, 'ipv4');
for (const [network, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
] as const) {
  FORBIDDEN.addSubnet(network, bits, 'ipv6');
}

/** Whether an address is one a webhook may reach (IPv4-mapped IPv6 is judged as IPv4). */
export function isPublicAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  const ip = mapped ?? address;
  const family = isIP(ip);
  if (family === 0) return false;
  return !FORBIDDEN.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * A DNS lookup for the delivery connection that refuses forbidden addresses, so a name that resolved to a
 * public address when the endpoint was saved cannot be re-pointed at an internal one (DNS rebinding).
 */
export function createGuardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const allowed = allowPrivate ? addresses : addresses.filter((entry) => isPublicAddress(entry.address));
      if (allowed.length === 0) {
        const refused = new Error(
          `webhook host ${hostname} resolves only to private addresses`,
        ) as NodeJS.ErrnoException;
        refused.code = 'EPRIVATEADDRESS';
        return callback(refused, []);
      }
      if (options.all) return callback(null, allowed);
      const first = allowed[0]!;
      return callback(null, first.address, first.family);
    });
  };
}

/** Whether a webhook URL names a port the operator allows (TOLLGATE_WEBHOOK_PORTS; 80 and 443 by default). */
export function isAllowedPort(url: URL, ports: readonly number[] | 'any'): boolean {
  if (ports === 'any') return true;
  const port = url.port === '' ? (url.protocol === 'http:' ? 80 : 443) : Number(url.port);
  return ports.includes(port);
}

/**
 * Checks an endpoint URL when it is saved: https (http only where private targets are allowed), an allowed
 * port, public addresses.
 */
export async function checkWebhookUrl(
  raw: string,
  allowPrivate: boolean,
  ports: readonly number[] | 'any' = [80, 443],
): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new GatewayError('invalid_request', 'url must be an absolute URL', URL_PARAM);
  }
  const protocols = allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!protocols.includes(url.protocol))
    throw new GatewayError('invalid_request', 'url must use https', URL_PARAM);
  if (url.username || url.password)
    throw new GatewayError('invalid_request', 'url must not carry credentials', URL_PARAM);
  if (!isAllowedPort(url, ports))
    throw new GatewayError(
      'invalid_request',
      `url must use port ${ports === 'any' ? '' : ports.join(' or ')} (other ports are refused)`,
      URL_PARAM,
    );
  if (allowPrivate) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : await resolveAll(host);
  if (addresses.length === 0)
    throw new GatewayError(
      'invalid_request',
      `url's host ${host} does not resolve to any address`,
      URL_PARAM,
    );
  if (!addresses.every(isPublicAddress)) {
    throw new GatewayError(
      'invalid_request',
      'url must resolve to public addresses only (no loopback, private, link-local or metadata addresses)',
      URL_PARAM,
    );
  }
  return url;
}

/** Every refusal names the field at fault, as OpenAI's `param` does. */
const URL_PARAM = { param: 'url' } as const;

function resolveAll(host: string): Promise<string[]> {
  return new Promise((resolve) =>
    lookup(host, { all: true }, (error, addresses) => resolve(error ? [] : addresses.map((a) => a.address))),
  );
}
