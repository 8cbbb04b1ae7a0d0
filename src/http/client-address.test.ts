import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createClientAddress, trustFunction } from './client-address.ts';

describe('client address: no proxy trusted', () => {
  it('is always the socket peer; X-Forwarded-For is never believed', () => {
    const address = createClientAddress(false);
    assert.equal(address('203.0.113.9', undefined), '203.0.113.9');
    assert.equal(address('203.0.113.9', '198.51.100.1'), '203.0.113.9');
    assert.equal(trustFunction(false), false);
  });
});

describe('client address: a hop count', () => {
  it('trusts that many hops from the right, the peer being hop 0', () => {
    const one = createClientAddress(1);
    // The peer (the proxy) is trusted; the entry it appended is the client; the rest is the client's own text.
    assert.equal(one('10.0.0.1', '1.1.1.1, 198.51.100.7'), '198.51.100.7');
    const two = createClientAddress(2);
    assert.equal(two('10.0.0.1', '1.1.1.1, 198.51.100.7, 10.0.0.2'), '198.51.100.7');
    const trusted = trustFunction(2);
    assert.ok(trusted);
    assert.equal(trusted('any', 0), true);
    assert.equal(trusted('any', 1), true);
    assert.equal(trusted('any', 2), false);
  });

  it('with fewer entries than trusted hops, the leftmost entry is the client', () => {
    assert.equal(createClientAddress(5)('10.0.0.1', '198.51.100.7, 10.0.0.2'), '198.51.100.7');
  });

  it('without the header the peer is the client', () => {
    assert.equal(createClientAddress(1)('10.0.0.1', undefined), '10.0.0.1');
    assert.equal(createClientAddress(1)('10.0.0.1', ''), '10.0.0.1');
  });
});

describe('client address: trusted CIDR blocks', () => {
  const behindProxies = createClientAddress(['10.0.0.0/8', '192.168.1.5', '2001:db8::/32']);

  it('walks from the right past every trusted proxy; the first untrusted hop is the client', () => {
    assert.equal(behindProxies('10.0.0.1', '198.51.100.7'), '198.51.100.7');
    assert.equal(behindProxies('10.0.0.1', '198.51.100.7, 192.168.1.5, 10.2.3.4'), '198.51.100.7');
    // What the client wrote left of its own address is never believed, however plausible.
    assert.equal(behindProxies('10.0.0.1', '10.9.9.9, 198.51.100.7, 10.2.3.4'), '198.51.100.7');
  });

  it('an untrusted peer is the client, whatever header it sends', () => {
    assert.equal(behindProxies('203.0.113.9', '198.51.100.7'), '203.0.113.9');
    assert.equal(behindProxies('192.168.1.6', '198.51.100.7'), '192.168.1.6', 'a bare address is a /32');
  });

  it('checks the prefix length exactly', () => {
    const slash24 = createClientAddress(['192.168.1.0/24']);
    assert.equal(slash24('192.168.1.255', '198.51.100.7'), '198.51.100.7');
    assert.equal(slash24('192.168.2.0', '198.51.100.7'), '192.168.2.0');
  });

  it('when every hop is trusted, the leftmost is the client', () => {
    assert.equal(behindProxies('10.0.0.1', '10.1.1.1, 10.2.2.2'), '10.1.1.1');
  });

  it('a hop that is not an IP address stops the walk at the last address seen', () => {
    assert.equal(behindProxies('10.0.0.1', 'unknown'), '10.0.0.1');
    assert.equal(behindProxies('10.0.0.1', '198.51.100.7, garbage, 10.2.3.4'), '10.2.3.4');
  });

  it('matches IPv6 blocks, and IPv4-mapped IPv6 addresses as their IPv4 address', () => {
    assert.equal(behindProxies('2001:db8::1', '198.51.100.7'), '198.51.100.7');
    assert.equal(behindProxies('2001:db9::1', '198.51.100.7'), '2001:db9::1');
    assert.equal(behindProxies('::ffff:10.0.0.1', '198.51.100.7'), '198.51.100.7');
    assert.equal(behindProxies('10.0.0.1', '2001:db8:ffff::1, 2606:4700::1'), '2606:4700::1');
    const trusted = trustFunction(['::1']);
    assert.ok(trusted);
    assert.equal(trusted('::1', 0), true, 'a bare IPv6 address is a /128');
    assert.equal(trusted('::2', 0), false);
  });

  it('trims the spaces around entries', () => {
    assert.equal(behindProxies('10.0.0.1', '  198.51.100.7  ,10.2.3.4 '), '198.51.100.7');
  });
});
