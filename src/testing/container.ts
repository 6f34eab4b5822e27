// A Redis container through testcontainers, an optional peer dependency: imported only when no
// other source gave a Redis, and only used when a container runtime (a Docker engine) answers.
// Its types are not imported, so users without testcontainers get no missing-module type error.

export interface Container {
  readonly host: string;
  readonly port: number;
  stop(): Promise<void>;
}

interface StartedContainer {
  getHost(): string;
  getMappedPort(port: number): number;
  stop(): Promise<unknown>;
}
interface Testcontainers {
  getContainerRuntimeClient?(): Promise<unknown>;
  GenericContainer: new (image: string) => {
    withExposedPorts(...ports: number[]): { withStartupTimeout(ms: number): { start(): Promise<StartedContainer> } };
  };
}

/** Why no container could be had, for the error that names every source. */
export class ContainerUnavailable extends Error {}

export async function startContainer(image: string, timeoutMs: number): Promise<Container> {
  let testcontainers: Testcontainers;
  try {
    testcontainers = (await import('testcontainers')) as unknown as Testcontainers;
  } catch (error) {
    throw new ContainerUnavailable('the testcontainers package is not installed (npm i -D testcontainers)', { cause: error });
  }
  try {
    await testcontainers.getContainerRuntimeClient?.();
  } catch (error) {
    throw new ContainerUnavailable(`no Docker engine answered (${(error as Error).message})`, { cause: error });
  }
  const container = await new testcontainers.GenericContainer(image).withExposedPorts(6379).withStartupTimeout(timeoutMs).start();
  return { host: container.getHost(), port: container.getMappedPort(6379), stop: async () => void (await container.stop()) };
}
