import { promises as dns } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { GatewayError } from '../core/gateway-error.ts';

/** A host name's addresses, as `dns.lookup` with `all` gives them; injected where a test plays DNS. */
export type Resolve = (host: string) => Promise<{ address: string; family: number }[]>;
export const systemResolve: Resolve = (host) => dns.lookup(host, { all: true });

// Where a webhook must never go: loopback, private, link-local (cloud metadata included), CGNAT, benchmarking,
// multicast, reserved.
const FORBIDDEN_V4 = new BlockList();
for (const [network, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  FORBIDDEN_V4.addSubnet(network, bits, 'ipv4');

/**
 * IPv6 is judged by what may be public, not by what is known to be private: only global unicast (2000::/3)
 * can be, which leaves out loopback, unique-local, link- and site-local, multicast, NAT64 (64:ff9b::/96 and
 * 64:ff9b:1::/48) and every form that embeds an IPv4 address below ::/8 (IPv4-compatible, IPv4-translated).
 * Inside it, the ranges that tunnel to an IPv4 address of the sender's choosing are refused too: 6to4
 * (2002::/16) and the IETF protocol block with Teredo (2001::/23, 2001::/32 among it). IPv4-mapped addresses
 * (::ffff:0:0/96) are judged as the IPv4 address they carry.
 */
const GLOBAL_V6 = new BlockList();
GLOBAL_V6.addSubnet('2000::', 3, 'ipv6');
const FORBIDDEN_V6 = new BlockList();
for (const [network, bits] of [
  ['2001::', 23],
  ['2002::', 16],
] as const)
  FORBIDDEN_V6.addSubnet(network, bits, 'ipv6');

/** An IPv6 address in the one compressed form URLs print (`::ffff:7f00:1` for every spelling of it). */
function canonicalV6(address: string): string | undefined {
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
}

/** Whether an address is one a webhook may reach. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !FORBIDDEN_V4.check(address, 'ipv4');
  if (family !== 6) return false;
  const canonical = canonicalV6(address);
  if (canonical === undefined) return false;
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (mapped) {
    const high = parseInt(mapped[1]!, 16);
    const low = parseInt(mapped[2]!, 16);
    return isPublicAddress(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`);
  }
  return GLOBAL_V6.check(canonical, 'ipv6') && !FORBIDDEN_V6.check(canonical, 'ipv6');
}

/**
 * The DNS lookup of every delivery connection: it refuses forbidden addresses, so a name that resolved to a
 * public address when the endpoint was saved cannot be re-pointed at an internal one (DNS rebinding). The
 * connection goes to an address this lookup returned, the one that was checked.
 */
export function createGuardedLookup(allowPrivate: boolean, resolve: Resolve = systemResolve): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        const allowed = allowPrivate
          ? addresses
          : addresses.filter((entry) => isPublicAddress(entry.address));
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
      },
      (error: NodeJS.ErrnoException) => callback(error, []),
    );
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
  resolve: Resolve = systemResolve,
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
  const addresses = isIP(host) ? [host] : await resolveAll(resolve, host);
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

async function resolveAll(resolve: Resolve, host: string): Promise<string[]> {
  try {
    return (await resolve(host)).map((entry) => entry.address);
  } catch {
    return [];
  }
}
