import { isMap, isScalar, LineCounter, type Node, parseDocument, type YAMLMap } from 'yaml';

/** A validation problem as the server reports it (src/model's DefinitionProblem). */
export interface PlacedProblemInput {
  readonly path: string;
  readonly field: string;
  readonly message: string;
}

export interface PlacedProblem extends PlacedProblemInput {
  /** 1-based line of the pasted YAML the problem is about; 0 when no line can be named. */
  readonly line: number;
}

/**
 * Puts each of the server's problems with a system definition at its line of the YAML the user
 * pasted: the server names a problem by service path and field (it validates the parsed value, and
 * `berth deploy` may send a file the server never sees as text), the console has the text.
 * A service's field goes to that key's line, else the service's line, else the top-level key's.
 */
export function placeProblems(yamlText: string, problems: readonly PlacedProblemInput[]): PlacedProblem[] {
  const counter = new LineCounter();
  const doc = parseDocument(yamlText, { lineCounter: counter, uniqueKeys: false });
  const lineOf = (node: Node | null | undefined): number =>
    node?.range ? counter.linePos(node.range[0]).line : 0;
  const root = isMap(doc.contents) ? doc.contents : undefined;
  const keyNode = (
    map: YAMLMap | undefined,
    key: string,
  ): { key: Node | undefined; value: unknown } | undefined => {
    for (const pair of map?.items ?? [])
      if (isScalar(pair.key) && String(pair.key.value) === key) return { key: pair.key, value: pair.value };
    return undefined;
  };
  return problems.map((problem) => {
    const fromMessage = /YAML line (\d+)/.exec(problem.message);
    if (fromMessage) return { ...problem, line: Number(fromMessage[1]) };
    const field = problem.field.split(/[.[]/)[0] ?? '';
    if (problem.path === '/' || problem.path === '') {
      const top = field ? keyNode(root, field) : undefined;
      return { ...problem, line: lineOf(top?.key) };
    }
    for (const section of ['services', 'jobs']) {
      const group = keyNode(root, section)?.value;
      const entry = isMap(group) ? keyNode(group, problem.path) : undefined;
      if (!entry) continue;
      const inner = isMap(entry.value) && field ? keyNode(entry.value, field) : undefined;
      return { ...problem, line: lineOf(inner?.key ?? entry.key) };
    }
    return { ...problem, line: 0 };
  });
}
