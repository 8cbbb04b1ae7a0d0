import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import {
  api,
  currentOrganization,
  type Invitation,
  type List,
  type Member,
  type Organization,
  setCurrentOrganization,
} from '../api.ts';
import { ErrorMessage, Field, Notice, Section, TableWrap } from '../ui.tsx';

const ROLES: readonly Organization['role'][] = ['owner', 'admin', 'billing', 'developer', 'viewer'];
/** Who may manage members: the same rule as the server's role table (owner and admin). */
const managesMembers = (role: Organization['role'] | undefined) => role === 'owner' || role === 'admin';

/** The organizations the person belongs to (a switcher), and the current one's members and invitations. */
export function Members() {
  const queryClient = useQueryClient();
  const organizations = useQuery({
    queryKey: ['organizations'],
    queryFn: () => api<List<Organization>>('/api/organizations'),
  });
  const [chosen, setChosen] = useState(currentOrganization);
  const current =
    organizations.data?.data.find((o) => o.id === chosen) ?? organizations.data?.data[0] ?? undefined;
  const members = useQuery({
    queryKey: ['members', current?.id],
    enabled: current !== undefined,
    queryFn: () => api<List<Member>>(`/api/organizations/${current!.id}/members`),
  });
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Organization['role']>('developer');
  const [invited, setInvited] = useState('');
  const invite = useMutation({
    mutationFn: () =>
      api<Invitation>(`/api/organizations/${current!.id}/invitations`, {
        method: 'POST',
        body: { email, role },
      }),
    onSuccess: (answer) => {
      setInvited(`Invitation sent to ${email}. Its single-use token: ${answer.token ?? ''}`);
      setEmail('');
    },
  });
  const change = useMutation({
    mutationFn: (v: { id: string; body: Record<string, unknown> }) =>
      api<Member>(`/api/organizations/${current!.id}/members/${v.id}`, { method: 'PATCH', body: v.body }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['members'] }),
  });
  const remove = useMutation({
    mutationFn: (id: string) =>
      api<Member>(`/api/organizations/${current!.id}/members/${id}`, { method: 'DELETE' }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['members'] }),
  });
  const manages = managesMembers(current?.role);

  return (
    <>
      <h1>Members</h1>
      <Section title="Organization">
        <Choice
          label="Acting in"
          value={current?.id ?? ''}
          options={(organizations.data?.data ?? []).map((o) => [o.id, `${o.name} (${o.role})`])}
          onChange={async (value) => {
            setCurrentOrganization(value);
            setChosen(value);
            await queryClient.invalidateQueries();
          }}
        />
        {current && <p>Your role here: {current.role}</p>}
      </Section>
      <Section title="People">
        <ErrorMessage error={members.error ?? change.error ?? remove.error} />
        <TableWrap label="Members">
          <table>
            <thead>
              <tr>
                <th scope="col">E-mail</th>
                <th scope="col">Role</th>
                <th scope="col">Limit</th>
                <th scope="col">Models</th>
                {manages && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {members.data?.data.map((m) => (
                <tr key={m.id}>
                  <td>{m.email}</td>
                  <td>
                    {manages ? (
                      <select
                        aria-label={`Role of ${m.email}`}
                        value={m.role}
                        onChange={(event) => change.mutate({ id: m.id, body: { role: event.target.value } })}
                      >
                        {ROLES.map((r) => (
                          <option key={r}>{r}</option>
                        ))}
                      </select>
                    ) : (
                      m.role
                    )}
                  </td>
                  <td>{m.limit_usd === null ? 'none' : `$${m.limit_usd} ${m.limit_period ?? ''}`}</td>
                  <td>{m.allowed_models?.join(', ') ?? 'all'}</td>
                  {manages && (
                    <td>
                      <button type="button" onClick={() => remove.mutate(m.id)}>
                        Remove
                      </button>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      </Section>
      {manages && (
        <Section title="Invite">
          <form
            onSubmit={(event) => {
              event.preventDefault();
              invite.mutate();
            }}
          >
            <Field label="E-mail" type="email" required value={email} onChange={setEmail} />
            <Choice
              label="Role"
              value={role}
              options={ROLES.map((r) => [r, r])}
              onChange={(value) => setRole(value as Organization['role'])}
            />
            <button type="submit">Invite</button>
          </form>
          <ErrorMessage error={invite.error} />
          {invited && <Notice>{invited}</Notice>}
        </Section>
      )}
    </>
  );
}

/** A labelled drop-down. */
function Choice(props: {
  label: string;
  value: string;
  options: readonly (readonly [string, string])[];
  onChange: (value: string) => void | Promise<void>;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      <select id={id} value={props.value} onChange={(event) => void props.onChange(event.target.value)}>
        {props.options.map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
    </div>
  );
}
