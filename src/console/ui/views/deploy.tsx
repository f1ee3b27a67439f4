import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import type { ActionRecord } from '../../../model/index.js';
import { type PlacedProblem, placeProblems } from '../../model/definition-lines.js';
import { authGate } from '../auth-gate.js';
import { ApiError, apiSend, SignInNeeded } from '../console-api.js';
import { Section } from '../widgets.js';

const draftKey = 'berth-console-deploy-draft';

/**
 * Deploy a system by pasting or uploading its YAML. The draft is kept in sessionStorage as it is
 * typed, so a token that expires mid-edit sends the user to sign in and back without losing it.
 * A refused definition shows every problem the server found, each at its line of the text.
 */
export function Deploy() {
  const location = useLocation();
  const [text, setText] = useState(() => sessionStorage.getItem(draftKey) ?? '');
  const [problems, setProblems] = useState<PlacedProblem[]>([]);
  const [message, setMessage] = useState('');
  const [busy, setBusy] = useState(false);
  const update = (value: string) => {
    setText(value);
    sessionStorage.setItem(draftKey, value);
  };
  const upload = async (file: File | undefined) => {
    if (file) update(await file.text());
  };
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setProblems([]);
    setMessage('');
    try {
      const action = await apiSend<ActionRecord>('POST', '/v1/deploys', { definition: text });
      sessionStorage.removeItem(draftKey);
      location.route(`/console/systems/${encodeURIComponent(action.system)}`);
    } catch (err) {
      if (err instanceof SignInNeeded) {
        authGate.require(err.message);
        return;
      }
      const details = err instanceof ApiError ? err.details : {};
      const list = Array.isArray(details.problems) ? (details.problems as PlacedProblem[]) : [];
      if (list.length > 0) setProblems(placeProblems(text, list));
      setMessage(err instanceof Error ? (err.message.split('\n')[0] ?? err.message) : String(err));
    } finally {
      setBusy(false);
    }
  };
  const lines = text.split('\n');
  const byLine = new Map<number, PlacedProblem[]>();
  for (const p of problems) byLine.set(p.line, [...(byLine.get(p.line) ?? []), p]);
  return (
    <Section title="Deploy a system" id="deploy">
      <form onSubmit={submit}>
        <label for="definition">System definition (YAML)</label>
        <textarea
          id="definition"
          rows={18}
          spellcheck={false}
          value={text}
          onInput={(e) => update((e.target as HTMLTextAreaElement).value)}
          placeholder={'system: shop\nservices:\n  /web:\n    image: bb:1\n    instances: 2'}
        />
        <div class="actions">
          <label class="file">
            Upload a file{' '}
            <input
              type="file"
              accept=".yaml,.yml,text/yaml"
              onChange={(e) => void upload((e.target as HTMLInputElement).files?.[0])}
            />
          </label>
          <button type="submit" id="deploy-submit" disabled={busy || text.trim() === ''}>
            {busy ? 'Deploying…' : 'Deploy'}
          </button>
        </div>
      </form>
      {message && (
        <p role="alert" class="error" id="deploy-error">
          {message}
        </p>
      )}
      {problems.length > 0 && (
        <div id="deploy-problems">
          <ol class="problems">
            {problems.map((p) => (
              <li key={`${p.path}|${p.field}|${p.message}`} data-line={p.line}>
                {p.line > 0 ? `line ${p.line}: ` : ''}
                <code>{p.path}</code>
                {p.field ? ` ${p.field}` : ''}: {p.message}
              </li>
            ))}
          </ol>
          <figure>
            <figcaption class="visually-hidden">The definition with its problems</figcaption>
            <pre class="annotated">
              {lines.map((line, i) => {
                const here = byLine.get(i + 1);
                return (
                  <div key={i} class={here ? 'problem-line' : undefined}>
                    <span class="line-no">{i + 1}</span>
                    {line}
                    {here ? (
                      <span class="problem-note"> ← {here.map((p) => p.message).join('; ')}</span>
                    ) : null}
                  </div>
                );
              })}
            </pre>
          </figure>
        </div>
      )}
    </Section>
  );
}
