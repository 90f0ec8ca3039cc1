import { useId } from 'react';

/** The comment kept with an approval's decision (in the run's history and the audit log). */
export function CommentField({
  value,
  onChange,
}: {
  value: string;
  onChange: (v: string) => void;
}) {
  const id = useId();
  return (
    <p>
      <label htmlFor={id}>Comment (why; kept with the decision)</label>
      <br />
      <textarea
        id={id}
        rows={3}
        cols={40}
        maxLength={1000}
        value={value}
        onChange={(e) => onChange(e.target.value)}
      />
    </p>
  );
}
