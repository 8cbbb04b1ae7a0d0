import type { StatusDocument } from '../operators/status-snapshot.ts';
import type { Announcement } from '../store/announcements-repo.ts';

const escapeXml = (text: string): string =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!,
  );

const stamp = (ms: number): string => new Date(ms).toISOString();

/**
 * The snapshot's newest announcements as an Atom 1.0 feed (RFC 4287): the feed and every entry carry id,
 * title and updated; the feed names its author and its own address. `baseUrl` is the site's public address,
 * without a slash. An ended notice stays (a reader that saw it learns it ended): "(ended)" after its title,
 * its end before its text, and `updated` at least its end. An entry links to its notice on `/status` while
 * the page shows it, else to the page itself (an ended, future or past-effective notice has no anchor there);
 * its id never changes (docs/decisions.md, "Ended notices in the Atom feed").
 */
export function renderAtomFeed(status: StatusDocument, baseUrl: string): string {
  const page = `${baseUrl}/status`;
  const now = status.updatedAt;
  const onPage = new Set(
    [...status.incidents, ...status.announcements, ...status.breakingChanges].map((a) => a.id),
  );
  const endedAt = (a: Announcement): number | null =>
    a.endsAt !== null && a.endsAt <= now ? a.endsAt : null;
  const updatedOf = (a: Announcement): number => Math.max(a.updatedAt, endedAt(a) ?? 0);
  const updated = status.feed.reduce((latest, a) => Math.max(latest, updatedOf(a)), 0) || now;
  const entries = status.feed.map((a) => {
    const ended = endedAt(a);
    const effective =
      a.breaking && a.effectiveAt !== null ? `Takes effect ${stamp(a.effectiveAt).slice(0, 10)} (UTC). ` : '';
    const models = a.models.length > 0 ? `Models: ${a.models.join(', ')}. ` : '';
    const end = ended === null ? '' : `Ended ${stamp(ended).slice(0, 16).replace('T', ' ')} UTC. `;
    const title = `${a.breaking ? 'Breaking change: ' : ''}${a.title}${ended === null ? '' : ' (ended)'}`;
    return `  <entry>
    <id>${escapeXml(`${page}#${a.id}`)}</id>
    <title>${escapeXml(title)}</title>
    <updated>${stamp(updatedOf(a))}</updated>
    <published>${stamp(a.createdAt)}</published>
    <link rel="alternate" type="text/html" href="${escapeXml(onPage.has(a.id) ? `${page}#${a.id}` : page)}"/>
    <category term="${escapeXml(a.severity)}"/>
    <content type="text">${escapeXml(`${end}${effective}${models}${a.body}`)}</content>
  </entry>`;
  });
  return `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <id>${escapeXml(page)}</id>
  <title>Tollgate status: announcements</title>
  <updated>${stamp(updated)}</updated>
  <author><name>Tollgate operators</name></author>
  <link rel="self" type="application/atom+xml" href="${escapeXml(`${page}/feed.atom`)}"/>
  <link rel="alternate" type="text/html" href="${escapeXml(page)}"/>
${entries.join('\n')}
</feed>
`;
}
