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
  /** Volumes seen mounted in this project's containers: named and anonymous. */
  readonly #volumes: string[] = [];

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
    // With their anonymous volumes (the image's VOLUME /etc/gatehouse), which `compose down` leaves behind.
    for (const id of await this.containerIds()) {
      const mounts = await podman(['inspect', id, '--format', '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}}\n{{end}}{{end}}'], { allowFailure: true });
      this.#volumes.push(...mounts.stdout.split('\n').filter(Boolean));
      await podman(['rm', '--force', '--volumes', '--time', '10', id], { allowFailure: true });
    }
    await this.compose(['down', '--volumes'], { allowFailure: true });
    await podman(['pod', 'rm', '--force', '--ignore', `pod_${this.name}`], { allowFailure: true });
    for (const volume of await this.volumes()) await podman(['volume', 'rm', '--force', volume], { allowFailure: true });
    for (const network of await this.networks()) await podman(['network', 'rm', '--force', network], { allowFailure: true });
  }

  /** What is left of this project after `remove()` (empty when clean). */
  async leftovers(): Promise<string[]> {
    return [...(await this.containerIds()), ...(await this.volumes()), ...(await this.networks())];
  }

  private async containerIds(): Promise<string[]> {
    return lines(await podman(['ps', '--all', '--quiet', '--filter', `label=io.podman.compose.project=${this.name}`], { allowFailure: true }));
  }

  private async volumes(): Promise<string[]> {
    const labelled = lines(await podman(['volume', 'ls', '--quiet', '--filter', `label=io.podman.compose.project=${this.name}`], { allowFailure: true }));
    const mounted = [];
    for (const volume of this.#volumes) if ((await podman(['volume', 'exists', volume], { allowFailure: true })).code === 0) mounted.push(volume);
    return [...new Set([...labelled, ...mounted])];
  }

  private async networks(): Promise<string[]> {
    return lines(await podman(['network', 'ls', '--quiet', '--filter', `name=^${this.name}`], { allowFailure: true }));
  }
}

function lines(result: CommandResult): string[] {
  return result.stdout.split('\n').filter(Boolean);
}
