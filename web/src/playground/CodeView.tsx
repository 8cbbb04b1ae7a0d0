import { useState } from 'react';
import { CODE, type Language } from './code.ts';

const LANGUAGES: Language[] = ['curl', 'python', 'typescript'];

/** The request as code in three languages, with a copy button; the key comes from TOLLGATE_API_KEY. */
export function CodeView({ body, title }: { body: Record<string, unknown>; title: string }) {
  const [language, setLanguage] = useState<Language>('curl');
  const [copied, setCopied] = useState(false);
  const code = CODE[language].make(`${window.location.origin}/v1`, body);
  return (
    <div className="code-view">
      <div className="tabs" role="group" aria-label={`Language of ${title}`}>
        {LANGUAGES.map((lang) => (
          <button
            key={lang}
            type="button"
            className={lang === language ? '' : 'secondary'}
            aria-pressed={lang === language}
            onClick={() => {
              setLanguage(lang);
              setCopied(false);
            }}
          >
            {CODE[lang].label}
          </button>
        ))}
        <button
          type="button"
          className="secondary"
          onClick={() => {
            void navigator.clipboard?.writeText(code).then(() => setCopied(true));
          }}
        >
          {copied ? 'Copied' : `Copy ${CODE[language].label}`}
        </button>
      </div>
      <pre tabIndex={0} aria-label={`${title} as ${CODE[language].label}`}>
        <code>{code}</code>
      </pre>
      <p className="hint">
        Set <code>TOLLGATE_API_KEY</code> to one of your keys first. The playground itself uses your signed-in
        session.
      </p>
    </div>
  );
}
