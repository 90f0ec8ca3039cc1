import { ReactNode, Suspense, lazy } from 'react';
import { Loading } from '../components';

// The topology pages carry the graph drawing, its layout and a YAML reader: loaded when one of
// them is opened, so the other pages stay as light as they were.
const Topologies = lazy(() => import('./Topologies').then((m) => ({ default: m.Topologies })));
const TopologyDefinition = lazy(() =>
  import('./TopologyDefinition').then((m) => ({ default: m.TopologyDefinition })),
);
const TopologyImport = lazy(() =>
  import('./TopologyImport').then((m) => ({ default: m.TopologyImport })),
);
const TopologyRuns = lazy(() =>
  import('./TopologyRuns').then((m) => ({ default: m.TopologyRuns })),
);
const TopologyRun = lazy(() => import('./TopologyRun').then((m) => ({ default: m.TopologyRun })));
const Approvals = lazy(() => import('./Approvals').then((m) => ({ default: m.Approvals })));

function page(node: ReactNode) {
  return <Suspense fallback={<Loading what="the page" />}>{node}</Suspense>;
}

/** The topology pages' views: definitions, one definition (`?version=`), import, runs, one run. */
export const topologyViews = {
  topologies: () => page(<Topologies />),
  topology: (name: string) => page(<TopologyDefinition key={name} name={name} />),
  topologyImport: () => page(<TopologyImport />),
  topologyRuns: () => page(<TopologyRuns />),
  topologyRun: (id: string) => page(<TopologyRun key={id} id={id} />),
  approvals: () => page(<Approvals />),
};
