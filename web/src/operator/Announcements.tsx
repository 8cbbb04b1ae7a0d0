import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { api, dateTime, type List } from '../api.ts';
import { DataTable, EmptyRow, ErrorMessage, Field, Notice, Section } from '../ui.tsx';
import { type Announcement, fromLocalInput, type Severity, toLocalInput } from './operator-api.ts';
import { Select } from './Select.tsx';

interface Draft {
  title: string;
  body: string;
  severity: Severity;
  models: string;
  startsAt: string;
  endsAt: string;
  breaking: boolean;
  effectiveAt: string;
}

const EMPTY: Draft = {
  title: '',
  body: '',
  severity: 'info',
  models: '',
  startsAt: '',
  endsAt: '',
  breaking: false,
  effectiveAt: '',
};

function draftOf(notice: Announcement): Draft {
  return {
    title: notice.title,
    body: notice.body,
    severity: notice.severity,
    models: notice.models.join(', '),
    startsAt: toLocalInput(notice.starts_at),
    endsAt: toLocalInput(notice.ends_at),
    breaking: notice.breaking,
    effectiveAt: toLocalInput(notice.effective_at),
  };
}

/** The request body for a draft; an empty start means now, an empty end means open-ended. */
function bodyOf(draft: Draft): Record<string, unknown> {
  const startsAt = fromLocalInput(draft.startsAt);
  return {
    title: draft.title,
    body: draft.body,
    severity: draft.severity,
    models: draft.models
      .split(',')
      .map((model) => model.trim())
      .filter(Boolean),
    ...(startsAt ? { starts_at: startsAt } : {}),
    ends_at: fromLocalInput(draft.endsAt) ?? null,
    breaking: draft.breaking,
    effective_at: draft.breaking ? (fromLocalInput(draft.effectiveAt) ?? null) : null,
  };
}

/** Post, edit and end the notices shown on /status; a breaking change also e-mails every verified account. */
export function Announcements() {
  const queryClient = useQueryClient();
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const [editing, setEditing] = useState<string | null>(null);
  const [message, setMessage] = useState('');
  const ids = { body: useId(), breaking: useId() };
  const list = useQuery({
    queryKey: ['operator', 'announcements'],
    queryFn: () => api<List<Announcement>>('/api/admin/announcements'),
  });
  const change = (fields: Partial<Draft>) => setDraft((current) => ({ ...current, ...fields }));
  const save = useMutation({
    mutationFn: () =>
      editing
        ? api(`/api/admin/announcements/${encodeURIComponent(editing)}`, {
            method: 'PATCH',
            body: bodyOf(draft),
          })
        : api('/api/admin/announcements', { method: 'POST', body: bodyOf(draft) }),
    onMutate: () => setMessage(''),
    onSuccess: async () => {
      setMessage(editing ? 'Announcement saved.' : 'Announcement posted.');
      setDraft(EMPTY);
      setEditing(null);
      await queryClient.invalidateQueries({ queryKey: ['operator', 'announcements'] });
    },
  });
  const end = useMutation({
    mutationFn: (id: string) =>
      api(`/api/admin/announcements/${encodeURIComponent(id)}/end`, { method: 'POST' }),
    onMutate: () => setMessage(''),
    onSuccess: async () => {
      setMessage('Announcement ended.');
      await queryClient.invalidateQueries({ queryKey: ['operator', 'announcements'] });
    },
  });
  const error = save.error ?? end.error;
  return (
    <>
      <h1>Announcements</h1>
      <p>
        Notices show on the public <a href="/status">status page</a>. A breaking change is e-mailed to every
        verified account and must take effect at least 90 days from now.
      </p>
      {message && !error && <Notice>{message}</Notice>}
      <ErrorMessage error={error ?? list.error} />
      <Section title={editing ? 'Edit announcement' : 'New announcement'}>
        <form
          onSubmit={(event) => {
            event.preventDefault();
            save.mutate();
          }}
        >
          <Field label="Title" value={draft.title} onChange={(title) => change({ title })} required />
          <div className="field">
            <label htmlFor={ids.body}>Message</label>
            <textarea
              id={ids.body}
              rows={4}
              value={draft.body}
              onChange={(event) => change({ body: event.target.value })}
              required
            />
          </div>
          <div className="inline-form align-top">
            <Select
              label="Severity"
              value={draft.severity}
              onChange={(severity) => change({ severity: severity as Severity })}
              options={[
                ['info', 'Info'],
                ['minor', 'Minor'],
                ['major', 'Major'],
                ['critical', 'Critical'],
              ]}
            />
            <Field
              label="Affected models"
              value={draft.models}
              onChange={(models) => change({ models })}
              hint="Model ids, separated by commas; empty for all."
            />
            <Field
              label="Starts (UTC)"
              type="datetime-local"
              value={draft.startsAt}
              onChange={(startsAt) => change({ startsAt })}
              hint="Empty: now."
            />
            <Field
              label="Ends (UTC)"
              type="datetime-local"
              value={draft.endsAt}
              onChange={(endsAt) => change({ endsAt })}
              hint="Empty: until ended."
            />
          </div>
          <div className="check">
            <input
              id={ids.breaking}
              type="checkbox"
              checked={draft.breaking}
              onChange={(event) => change({ breaking: event.target.checked })}
            />
            <label htmlFor={ids.breaking}>Breaking change</label>
          </div>
          {draft.breaking && (
            <Field
              label="Effective (UTC)"
              type="datetime-local"
              value={draft.effectiveAt}
              onChange={(effectiveAt) => change({ effectiveAt })}
              required
              hint="At least 90 days from now."
            />
          )}
          <div className="buttons">
            <button type="submit" disabled={save.isPending}>
              {editing ? 'Save announcement' : 'Post announcement'}
            </button>
            {editing && (
              <button
                type="button"
                className="secondary"
                onClick={() => {
                  setEditing(null);
                  setDraft(EMPTY);
                }}
              >
                Cancel editing
              </button>
            )}
          </div>
        </form>
      </Section>
      <Section title="All announcements">
        <DataTable
          label="Announcements"
          columns={['Title', 'Severity', 'Models', 'Starts', 'Ends', 'Breaking from', 'Actions']}
        >
          {list.data?.data.map((notice) => {
            const ended = notice.ends_at !== null && Date.parse(notice.ends_at) <= Date.now();
            return (
              <tr key={notice.id}>
                <td>{notice.title}</td>
                <td>{notice.severity}</td>
                <td>{notice.models.length > 0 ? notice.models.join(', ') : 'all'}</td>
                <td>{dateTime(notice.starts_at)}</td>
                <td>{ended ? `ended ${dateTime(notice.ends_at)}` : dateTime(notice.ends_at)}</td>
                <td>{notice.breaking ? dateTime(notice.effective_at) : '—'}</td>
                <td className="actions">
                  <button
                    type="button"
                    className="secondary"
                    onClick={() => {
                      setEditing(notice.id);
                      setDraft(draftOf(notice));
                      window.scrollTo({ top: 0 });
                    }}
                  >
                    Edit<span className="sr-only"> {notice.title}</span>
                  </button>
                  {!ended && (
                    <button
                      type="button"
                      className="danger"
                      disabled={end.isPending}
                      onClick={() => end.mutate(notice.id)}
                    >
                      End<span className="sr-only"> {notice.title}</span>
                    </button>
                  )}
                </td>
              </tr>
            );
          })}
          <EmptyRow when={list.data?.data.length === 0} columns={7}>
            No announcements yet.
          </EmptyRow>
        </DataTable>
      </Section>
    </>
  );
}
