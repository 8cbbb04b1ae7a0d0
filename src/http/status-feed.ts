import type { Announcement } from '../store/announcements-repo.ts';

const escapeXml = (text: string): string =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!,
  );

const stamp = (ms: number): string => new Date(ms).toISOString();

/**
 * The announcements as an Atom 1.0 feed (RFC 4287): the feed and every entry carry id, title and updated;
 * the feed names its author and its own address. `baseUrl` is the site's public address, without a slash.
 */
export function renderAtomFeed(
  announcements: readonly Announcement[],
  baseUrl: string,
  updatedAt: number,
): string {
  const page = `${baseUrl}/status`;
  const updated = announcements.reduce((latest, a) => Math.max(latest, a.updatedAt), 0) || updatedAt;
  const entries = announcements.map((a) => {
    const effective =
      a.breaking && a.effectiveAt !== null ? `Takes effect ${stamp(a.effectiveAt).slice(0, 10)} (UTC). ` : '';
    const models = a.models.length > 0 ? `Models: ${a.models.join(', ')}. ` : '';
    return `  <entry>
    <id>${escapeXml(`${page}#${a.id}`)}</id>
    <title>${escapeXml(a.breaking ? `Breaking change: ${a.title}` : a.title)}</title>
    <updated>${stamp(a.updatedAt)}</updated>
    <published>${stamp(a.createdAt)}</published>
    <link rel="alternate" type="text/html" href="${escapeXml(`${page}#${a.id}`)}"/>
    <category term="${escapeXml(a.severity)}"/>
    <content type="text">${escapeXml(`${effective}${models}${a.body}`)}</content>
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
