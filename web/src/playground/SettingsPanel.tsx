import { useId } from 'react';
import type { Settings } from './request.ts';

/** A labelled textarea of the settings panel. */
function Area(props: {
  label: string;
  value: string;
  onChange: (v: string) => void;
  rows: number;
  hint?: string;
  placeholder?: string;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      <textarea
        id={id}
        rows={props.rows}
        value={props.value}
        spellCheck={false}
        onChange={(e) => props.onChange(e.target.value)}
        {...(props.placeholder ? { placeholder: props.placeholder } : {})}
        {...(props.hint ? { 'aria-describedby': `${id}-hint` } : {})}
      />
      {props.hint && (
        <p className="hint" id={`${id}-hint`}>
          {props.hint}
        </p>
      )}
    </div>
  );
}

/** A labelled number input of the settings panel (empty: the model's default). */
function NumberInput(props: {
  label: string;
  value: string;
  onChange: (v: string) => void;
  min: number;
  max?: number;
  step: string;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      <input
        id={id}
        type="number"
        inputMode="decimal"
        min={props.min}
        {...(props.max !== undefined ? { max: props.max } : {})}
        step={props.step}
        placeholder="default"
        value={props.value}
        onChange={(e) => props.onChange(e.target.value)}
      />
    </div>
  );
}

/** The system prompt and the request's parameters; empty fields are left out of the request. */
export function SettingsPanel({
  settings,
  onChange,
}: {
  settings: Settings;
  onChange: (s: Settings) => void;
}) {
  const set = (field: keyof Settings) => (value: string) => onChange({ ...settings, [field]: value });
  return (
    <>
      <Area label="System prompt" rows={3} value={settings.system} onChange={set('system')} />
      <div className="param-grid">
        <NumberInput
          label="Temperature"
          min={0}
          max={2}
          step="0.1"
          value={settings.temperature}
          onChange={set('temperature')}
        />
        <NumberInput label="Top P" min={0} max={1} step="0.05" value={settings.topP} onChange={set('topP')} />
        <NumberInput
          label="Max tokens"
          min={1}
          step="1"
          value={settings.maxTokens}
          onChange={set('maxTokens')}
        />
      </div>
      <Area
        label="Stop sequences"
        rows={2}
        value={settings.stop}
        onChange={set('stop')}
        hint="One per line."
      />
      <details>
        <summary>Structured output and tools</summary>
        <Area
          label="JSON schema"
          rows={4}
          value={settings.jsonSchema}
          onChange={set('jsonSchema')}
          placeholder='{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}'
          hint="The answer must match this schema (response_format json_schema)."
        />
        <Area
          label="Tools"
          rows={4}
          value={settings.tools}
          onChange={set('tools')}
          placeholder='[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{}}}}]'
          hint="A JSON array of tools, as the API takes them."
        />
      </details>
    </>
  );
}
