// One run of docker-compose.yml under podman-compose, isolated from anything
// else on the machine: its own project name (so its own containers, volumes
// and network), host ports that were free, and a fresh random service token.
// `remove()` takes all of it away again, even after a half-finished start.
import { randomBytes } from 'node:crypto';
import { freePort } from '../helpers/ports.js';
import { command, podman, type CommandOptions, type CommandResult } from './podman.js';

export class ComposeProject {
  readonly name = `gatehouse-container-${randomBytes(4).toString('hex')}`;
  /** 32 random bytes, base64url: what an operator puts in .env. */
  readonly serviceToken = randomBytes(32).toString('base64url');

  private constructor(
    readonly root: string,
    readonly publicPort: number,
    readonly adminPort: number,
  ) {}

  static async create(root: string): Promise<ComposeProject> {
    return new ComposeProject(root, await freePort(), await freePort());
  }

  get publicUrl(): string {
    return `http://127.0.0.1:${this.publicPort}`;
  }

  get adminUrl(): string {
    return `http://127.0.0.1:${this.adminPort}`;
  }

  /** podman-compose names a service's first container `<project>_<service>_1`. */
  container(service: string): string {
    return `${this.name}_${service}_1`;
  }

  compose(args: string[], options: CommandOptions = {}): Promise<CommandResult> {
    return command('podman-compose', ['--project-name', this.name, '--file', 'docker-compose.yml', ...args], {
      ...options,
      env: {
        GATEHOUSE_SERVICE_TOKEN: this.serviceToken,
        GATEHOUSE_PORT: String(this.publicPort),
        GATEHOUSE_ADMIN_PORT: String(this.adminPort),
        ...options.env,
      },
    });
  }

  /** Containers, pod, volumes and network of this project, whatever state they are in. */
  async remove(): Promise<void> {
    await this.compose(['down', '--volumes'], { allowFailure: true });
    const label = `label=io.podman.compose.project=${this.name}`;
    const leftovers = await podman(['ps', '--all', '--quiet', '--filter', label], { allowFailure: true });
    for (const id of leftovers.stdout.split('\n').filter(Boolean)) await podman(['rm', '--force', '--volumes', id], { allowFailure: true });
    await podman(['pod', 'rm', '--force', '--ignore', `pod_${this.name}`], { allowFailure: true });
    const volumes = await podman(['volume', 'ls', '--quiet', '--filter', label], { allowFailure: true });
    for (const volume of volumes.stdout.split('\n').filter(Boolean)) await podman(['volume', 'rm', '--force', volume], { allowFailure: true });
    const networks = await podman(['network', 'ls', '--quiet', '--filter', `name=^${this.name}`], { allowFailure: true });
    for (const network of networks.stdout.split('\n').filter(Boolean)) await podman(['network', 'rm', '--force', network], { allowFailure: true });
  }

  /** What is left of this project after `remove()` (empty when clean). */
  async leftovers(): Promise<string[]> {
    const label = `label=io.podman.compose.project=${this.name}`;
    const found = await Promise.all([
      podman(['ps', '--all', '--quiet', '--filter', label], { allowFailure: true }),
      podman(['volume', 'ls', '--quiet', '--filter', label], { allowFailure: true }),
      podman(['network', 'ls', '--quiet', '--filter', `name=^${this.name}`], { allowFailure: true }),
    ]);
    return found.flatMap((result) => result.stdout.split('\n').filter(Boolean));
  }
}
