import { useQuery } from '@tanstack/react-query';
import { api } from '../api';
import { Empty, ErrorState, Loading, Time, useTitle } from '../components';
import { Link } from '../router';
import { Topology } from '../topology/model';
import { keys } from '../query-keys';

const defHref = (t: Pick<Topology, 'name'>): string => `/topologies/${encodeURIComponent(t.name)}`;

/** Topology definitions: the newest version of each, with links to its versions and runs. */
export function Topologies() {
  useTitle('Topologies');
  const list = useQuery({
    queryKey: keys.topologies(),
    queryFn: () => api<Topology[]>('/v1/topologies'),
    refetchInterval: 10_000,
  });

  return (
    <>
      <div className="title-row">
        <h1>Topologies</h1>
        <Link className="button" href="/topology-runs">
          All runs
        </Link>
        <Link className="button primary" href="/topology-import">
          Import a definition
        </Link>
      </div>
      {list.isPending ? (
        <Loading what="topologies" />
      ) : list.isError ? (
        <ErrorState error={list.error} what="topologies" />
      ) : list.data.length === 0 ? (
        <Empty>
          No topology definitions yet. <Link href="/topology-import">Import one</Link> from a YAML
          or JSON file (examples/topologies/ has one to try).
        </Empty>
      ) : (
        <div className="scroll" tabIndex={0} role="region" aria-label="Topology definitions">
          <table className="dense">
            <thead>
              <tr>
                <th scope="col">Definition</th>
                <th scope="col" className="num">
                  Newest version
                </th>
                <th scope="col" className="num">
                  Nodes
                </th>
                <th scope="col">Description</th>
                <th scope="col">Tenant</th>
                <th scope="col">Saved</th>
                <th scope="col">Runs</th>
              </tr>
            </thead>
            <tbody>
              {list.data.map((t) => (
                <tr key={t.name}>
                  <td>
                    <Link href={defHref(t)}>{t.name}</Link>
                  </td>
                  <td className="num">
                    <Link href={`${defHref(t)}?version=${t.version}`}>
                      v{t.version}
                      <span className="visually-hidden"> of {t.name}</span>
                    </Link>
                  </td>
                  <td className="num">{t.nodes.length}</td>
                  <td className="wrap">{t.description || <span className="muted">—</span>}</td>
                  <td>{t.tenant ?? <span className="muted">shared</span>}</td>
                  <td>
                    <Time iso={t.created_at} />
                    <div className="id">by {t.created_by}</div>
                  </td>
                  <td>
                    <Link href={`/topology-runs?name=${encodeURIComponent(t.name)}`}>
                      runs<span className="visually-hidden"> of {t.name}</span>
                    </Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
