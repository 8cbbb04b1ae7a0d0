import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { createTestClock, type TestClock } from './helpers/clock.ts';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/server.ts';

const DAY_MS = 86_400_000;
const MODELS = ['model-a', 'model-b', 'model-c', 'model-d', 'model-e', 'model-f'];

// The public status page, its JSON and its Atom feed, on the real server over each store.
for (const backend of BACKENDS) {
  const skip = await backend.unavailable();
  describe(`the status page on ${backend.name}`, { skip: skip ?? false }, () => {
    let opened: OpenedBackend;
    let server: TestServer;
    let time: TestClock;
    before(async () => {
      opened = await backend.open();
      time = createTestClock();
      // Yesterday: model-b was down for a quarter of its samples; model-a was up all day.
      const yesterday = (Math.floor(time.now / DAY_MS) - 1) * DAY_MS;
      for (let minute = 0; minute < 8; minute++) {
        const at = yesterday + minute * 60_000;
        await opened.db.run(
          "INSERT INTO health_samples (model, at, state) VALUES ('model-a', $1, 'operational')",
          [at],
        );
        await opened.db.run('INSERT INTO health_samples (model, at, state) VALUES ($1, $2, $3)', [
          'model-b',
          at,
          minute < 2 ? 'down' : 'degraded',
        ]);
      }
      // Past retention: deleted by the sampling job.
      await opened.db.run("INSERT INTO health_samples (model, at, state) VALUES ('model-a', $1, 'down')", [
        time.now - 91 * DAY_MS,
      ]);
      server = await startTestServer({ backend: opened, clock: time.clock });
      await server.call('POST', '/api/admin/announcements', {
        key: ADMIN_KEY,
        body: {
          title: 'Elevated errors on model-c',
          body: 'We are looking into it <b>now</b>.',
          severity: 'major',
          models: ['model-c'],
        },
      });
      await server.call('POST', '/api/admin/announcements', {
        key: ADMIN_KEY,
        body: {
          title: 'model-d retires its v1 answers',
          body: 'Move to v2.',
          breaking: true,
          effective_at: new Date(time.now + 120 * DAY_MS).toISOString(),
        },
      });
    });
    after(async () => {
      await server?.close();
      await opened?.cleanup();
    });

    it('status.json holds every public model’s state, 90 days of availability, incidents and breaking changes', async () => {
      const response = await server.call('GET', '/status.json');
      assert.equal(response.status, 200);
      const status = response.body;
      assert.deepEqual(
        status.models.map((m: any) => [m.id, m.state]),
        MODELS.map((id) => [id, 'operational']),
      );
      const b = status.models.find((m: any) => m.id === 'model-b');
      assert.equal(b.availability_90d.length, 90);
      assert.equal(b.availability_90d[89].day, new Date(time.now).toISOString().slice(0, 10));
      assert.equal(b.availability_90d[88].availability, 0.75);
      assert.equal(b.availability_90d[0].availability, null);
      assert.equal(status.models.find((m: any) => m.id === 'model-a').availability_90d[88].availability, 1);
      assert.deepEqual(
        status.incidents.map((a: any) => a.title),
        ['Elevated errors on model-c'],
      );
      assert.deepEqual(
        status.breaking_changes.map((a: any) => a.title),
        ['model-d retires its v1 answers'],
      );
      assert.deepEqual(status.announcements, []);
    });

    it('the HTML page works without script under a strict policy and escapes what operators wrote', async () => {
      const response = await fetch(`${server.url}/status`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
      const csp = response.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /style-src 'sha256-[A-Za-z0-9+/=]+'/);
      assert.doesNotMatch(csp, /unsafe-inline|script-src/);
      const html = await response.text();
      assert.doesNotMatch(html, /<script/i);
      for (const model of MODELS) assert.ok(html.includes(`<strong>${model}</strong>`), model);
      assert.ok(html.includes('Elevated errors on model-c'));
      assert.ok(html.includes('&#60;b&#62;now&#60;/b&#62;'), 'the body is escaped');
      assert.ok(html.includes('model-d retires its v1 answers'));
      assert.ok(html.includes('All models operational'));
    });

    it('the Atom feed is an Atom 1.0 document with an entry per announcement', async () => {
      const response = await fetch(`${server.url}/status/feed.atom`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^application\/atom\+xml/);
      const xml = await response.text();
      assert.match(
        xml,
        /^<\?xml version="1.0" encoding="utf-8"\?>\n<feed xmlns="http:\/\/www.w3.org\/2005\/Atom">/,
      );
      const head = xml.slice(0, xml.indexOf('<entry>'));
      for (const element of [
        /<id>http:\/\/127\.0\.0\.1:\d+\/status<\/id>/,
        /<title>[^<]+<\/title>/,
        /<updated>\d{4}-\d\d-\d\dT[\d:.]+Z<\/updated>/,
        /<author><name>[^<]+<\/name><\/author>/,
        /<link rel="self" type="application\/atom\+xml" href="http:\/\/127\.0\.0\.1:\d+\/status\/feed\.atom"\/>/,
      ])
        assert.match(head, element);
      const entries = xml.split('<entry>').slice(1);
      assert.equal(entries.length, 2);
      for (const entry of entries) {
        assert.match(entry, /<id>http:\/\/127\.0\.0\.1:\d+\/status#ann_[\w-]+<\/id>/);
        assert.match(entry, /<updated>\d{4}-\d\d-\d\dT[\d:.]+Z<\/updated>/);
        assert.match(entry, /<content type="text">/);
      }
      assert.ok(xml.includes('<title>Breaking change: model-d retires its v1 answers</title>'));
      assert.ok(xml.includes('&lt;b&gt;now&lt;/b&gt;'));
      assert.equal(xml.match(/<entry>/g)?.length, xml.match(/<\/entry>/g)?.length);
    });

    it('is served from a snapshot: many visits, one build, until the snapshot is a few seconds old', async () => {
      const status = server.services.operators.status;
      time.advance(10_000);
      await server.call('GET', '/status.json');
      const builds = status.builds;
      await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          fetch(`${server.url}${['/status', '/status.json', '/status/feed.atom'][i % 3]}`).then((r) =>
            r.text(),
          ),
        ),
      );
      assert.equal(status.builds, builds, 'no visit within the refresh interval rebuilt it');
      time.advance(10_000);
      await Promise.all(
        Array.from({ length: 10 }, () => fetch(`${server.url}/status.json`).then((r) => r.text())),
      );
      assert.equal(status.builds, builds + 1, 'visits together after the interval rebuilt it once');
    });

    it('the sampling job records each model’s state once a minute and drops samples past 90 days', async () => {
      const job = server.services.operators.jobs().find((j) => j.name === 'health-samples')!;
      time.advance(60_000);
      assert.equal(await server.services.scheduler.runOnce(job), true);
      const rows = await opened.db.all<{ model: string; state: string }>(
        'SELECT model, state FROM health_samples WHERE at >= $1 ORDER BY model',
        [Math.floor(time.now / 60_000) * 60_000],
      );
      assert.deepEqual(
        rows.map((r) => [r.model, r.state]),
        MODELS.map((m) => [m, 'operational']),
      );
      const old = await opened.db.get<{ n: number }>(
        'SELECT COUNT(*) AS n FROM health_samples WHERE at < $1',
        [time.now - 90 * DAY_MS],
      );
      assert.equal(Number(old?.n), 0);
    });

    it('the feed keeps an ended notice, marked ended and updated, linking to a page that exists', async () => {
      const posted = await server.call('POST', '/api/admin/announcements', {
        key: ADMIN_KEY,
        body: { title: 'Short maintenance', body: 'A restart.', severity: 'minor' },
      });
      assert.equal(posted.status, 201, JSON.stringify(posted.body));
      const id: string = posted.body.id;
      const entryOf = async (): Promise<string> => {
        time.advance(10_000); // past the snapshot's refresh
        const xml = await (await fetch(`${server.url}/status/feed.atom`)).text();
        const entry = xml.split('<entry>').find((e) => e.includes(`#${id}</id>`));
        assert.ok(entry, `no entry for ${id}:\n${xml}`);
        return entry;
      };
      const current = await entryOf();
      const link = /<link rel="alternate" type="text\/html" href="([^"]+)"\/>/;
      const currentHref = link.exec(current)![1]!;
      assert.ok(currentHref.endsWith(`/status#${id}`), currentHref);
      const page = await (await fetch(`${server.url}/status`)).text();
      assert.ok(page.includes(`id="${id}"`), 'the anchor of a current notice is on the page');
      assert.match(current, /<title>Short maintenance<\/title>/);

      const ended = await server.call('POST', `/api/admin/announcements/${id}/end`, {
        key: ADMIN_KEY,
        body: {},
      });
      assert.equal(ended.status, 200, JSON.stringify(ended.body));
      const entry = await entryOf();
      assert.match(entry, /<title>Short maintenance \(ended\)<\/title>/);
      assert.match(
        entry,
        /<content type="text">Ended \d{4}-\d\d-\d\d \d\d:\d\d UTC\. A restart\.<\/content>/,
      );
      assert.equal(
        /<updated>([^<]+)<\/updated>/.exec(entry)![1],
        ended.body.ends_at,
        'updated when it ended',
      );
      assert.match(entry, new RegExp(`<id>[^<]+/status#${id}</id>`), 'its id never changes');
      const href = link.exec(entry)![1]!;
      assert.ok(
        href.endsWith('/status'),
        `an ended notice links to the page itself, not a gone anchor: ${href}`,
      );
      assert.ok(!(await (await fetch(`${server.url}/status`)).text()).includes(`id="${id}"`));
    });
  });
}
