import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link } from 'react-router';
import { api, type ApiKey, dateTime, type IssuedKey, type List } from '../api.ts';
import { ErrorMessage, Field, Notice, Section, SkeletonRows, TableWrap } from '../ui.tsx';
import {
  ControlsFields,
  type ControlsDraft,
  controlsBody,
  describeLimit,
  draftOf,
  EMPTY_CONTROLS,
} from './KeyControls.tsx';

/** A secret shown once, with a copy button and the warning that it will not be shown again. */
export function SecretOnce({ issued, what }: { issued: IssuedKey; what: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="secret" role="status">
      <p>
        <strong>
          {what} “{issued.name}”. Copy it now: it is shown this once and cannot be shown again.
        </strong>
      </p>
      <div className="copy-row">
        <label htmlFor="new-secret">Secret key</label>
        <input id="new-secret" readOnly value={issued.key} onFocus={(e) => e.target.select()} />
        <button
          type="button"
          onClick={() => {
            void navigator.clipboard?.writeText(issued.key).then(() => setCopied(true));
          }}
        >
          {copied ? 'Copied' : 'Copy key'}
        </button>
      </div>
    </div>
  );
}

export function Keys() {
  const queryClient = useQueryClient();
  const keys = useQuery({ queryKey: ['keys'], queryFn: () => api<List<ApiKey>>('/api/keys') });
  const [name, setName] = useState('');
  const [ips, setIps] = useState('');
  const [issued, setIssued] = useState<{ key: IssuedKey; what: string } | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [controls, setControls] = useState<ControlsDraft>(EMPTY_CONTROLS);
  const [editing, setEditing] = useState<{ id: string; draft: ControlsDraft } | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['keys'] });
  const create = useMutation({
    mutationFn: () => {
      const allowed = ips
        .split(/[\s,]+/)
        .map((ip) => ip.trim())
        .filter(Boolean);
      return api<IssuedKey>('/api/keys', {
        method: 'POST',
        body: {
          name: name.trim() || 'unnamed',
          ...(allowed.length ? { allowed_ips: allowed } : {}),
          ...controlsBody(controls, false),
        },
      });
    },
    onSuccess: async (key) => {
      setIssued({ key, what: 'New key' });
      setName('');
      setIps('');
      setControls(EMPTY_CONTROLS);
      await refresh();
    },
  });
  const revoke = useMutation({
    mutationFn: (id: string) => api<ApiKey>(`/api/keys/${encodeURIComponent(id)}`, { method: 'DELETE' }),
    onSuccess: async () => {
      setConfirming(null);
      await refresh();
    },
  });
  const rotate = useMutation({
    mutationFn: (id: string) =>
      api<IssuedKey>(`/api/keys/${encodeURIComponent(id)}/rotate`, { method: 'POST' }),
    onSuccess: async (key) => {
      setIssued({ key, what: 'New secret for key' });
      await refresh();
    },
  });
  const change = useMutation({
    mutationFn: (edit: { id: string; draft: ControlsDraft }) =>
      api<ApiKey>(`/api/keys/${encodeURIComponent(edit.id)}`, {
        method: 'PATCH',
        body: controlsBody(edit.draft, true),
      }),
    onSuccess: async () => {
      setEditing(null);
      await refresh();
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <>
      <h1>API keys</h1>
      <p>
        Use a key as <code>Authorization: Bearer &lt;key&gt;</code> with any OpenAI-compatible client at{' '}
        <code>{window.location.origin}/v1</code>. To try a model without a key, use the{' '}
        <Link to="/playground">Playground</Link>: it takes no key slot.
      </p>
      {issued && <SecretOnce issued={issued.key} what={issued.what} />}
      <Section title="Create a key">
        <form onSubmit={submit} className="inline-form">
          <Field label="Key name" value={name} onChange={setName} placeholder="e.g. production" />
          <Field
            label="Allowed IP addresses (optional)"
            value={ips}
            onChange={setIps}
            placeholder="203.0.113.7, 10.0.0.0/8"
            hint="Comma-separated addresses or CIDR blocks; empty allows any address."
          />
          <ControlsFields draft={controls} onChange={setControls} />
          <button type="submit" disabled={create.isPending}>
            Create key
          </button>
        </form>
        <ErrorMessage error={create.error} />
      </Section>
      <Section title="Your keys">
        <ErrorMessage error={keys.error ?? revoke.error ?? rotate.error ?? change.error} />
        <TableWrap label="Your keys" className="keys-table">
          <table>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Status</th>
                <th scope="col">Last used</th>
                <th scope="col">Spending limit</th>
                <th scope="col">Rules</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {keys.isPending && <SkeletonRows columns={6} rows={3} />}
              {keys.data?.data.map((key) => (
                <tr key={key.id}>
                  <td>
                    <span className="key-name">{key.name}</span> <code>{key.prefix}</code>
                  </td>
                  <td>
                    {key.status === 'active' ? 'active' : `revoked ${dateTime(key.revoked_at)}`}
                    <div className="sub">created {dateTime(key.created_at)}</div>
                  </td>
                  <td>{key.last_used_at ? dateTime(key.last_used_at) : 'never'}</td>
                  <td>{describeLimit(key)}</td>
                  <td className="rules">
                    <div className="sub-list">
                      <span>Expires: {key.expires_at ? dateTime(key.expires_at) : 'never'}</span>
                      <span>IPs: {key.allowed_ips?.join(', ') ?? 'any'}</span>
                      <span>Models: {key.allowed_models?.join(', ') ?? 'all'}</span>
                    </div>
                  </td>
                  <td className="actions">
                    {key.status === 'active' && confirming !== key.id && (
                      <>
                        <button
                          type="button"
                          className="secondary"
                          onClick={() => setEditing({ id: key.id, draft: draftOf(key) })}
                        >
                          Edit<span className="sr-only"> controls of {key.name}</span>
                        </button>
                        <button type="button" className="secondary" onClick={() => rotate.mutate(key.id)}>
                          Rotate<span className="sr-only"> {key.name}</span>
                        </button>
                        <button type="button" className="danger" onClick={() => setConfirming(key.id)}>
                          Revoke<span className="sr-only"> {key.name}</span>
                        </button>
                      </>
                    )}
                    {confirming === key.id && (
                      <div role="group" aria-label={`Confirm revoking ${key.name}`}>
                        <span>Revoke “{key.name}”? Requests with it stop at once.</span>{' '}
                        <button type="button" className="danger" onClick={() => revoke.mutate(key.id)}>
                          Yes, revoke {key.name}
                        </button>{' '}
                        <button type="button" className="secondary" onClick={() => setConfirming(null)}>
                          Cancel
                        </button>
                      </div>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
        {editing && (
          <form
            className="inline-form"
            aria-label={`Controls of ${keys.data?.data.find((k) => k.id === editing.id)?.name ?? 'the key'}`}
            onSubmit={(event) => {
              event.preventDefault();
              change.mutate(editing);
            }}
          >
            <ControlsFields
              draft={editing.draft}
              onChange={(draft) => setEditing({ ...editing, draft })}
              suffix="(edit)"
            />
            <button type="submit" disabled={change.isPending}>
              Save controls
            </button>{' '}
            <button type="button" className="secondary" onClick={() => setEditing(null)}>
              Cancel
            </button>
          </form>
        )}
        {change.isSuccess && !editing && <Notice>The key's controls are saved.</Notice>}
        {revoke.isSuccess && <Notice>The key is revoked.</Notice>}
      </Section>
    </>
  );
}
