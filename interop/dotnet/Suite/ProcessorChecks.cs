using System.Net;
using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace CosmosInterop.Suite;

/// <summary>
/// The latest-version Change Feed Processor as Microsoft's ChangeFeed/DynamicTests.cs and SmokeTests.cs drive it:
/// delivery in order, a write right after StartAsync, manual checkpoints, a failing handler's batch retried, the lease
/// schema (and V2 leases), start times, a missing lease container.
/// </summary>
internal static class ProcessorChecks
{
    /// <summary>What a processor's handler saw: ids in delivery order, and any context that failed validation.</summary>
    private sealed class Seen
    {
        private readonly object gate = new();
        public readonly List<string> Ids = [];
        public readonly List<string> Problems = [];
        public readonly TaskCompletionSource Acquired = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private readonly List<(int Count, TaskCompletionSource Done)> waits = [];

        public void Add(ChangeFeedProcessorContext? context, IEnumerable<JObject> docs)
        {
            lock (gate)
            {
                if (context is not null)
                {
                    try { Fixtures.ValidContext(context); }
                    catch (CheckFailed e) { Problems.Add(e.Message); }
                }
                Ids.AddRange(docs.Select(d => (string)d["id"]!));
                foreach (var (count, done) in waits) if (Ids.Count >= count) done.TrySetResult();
            }
        }

        public Task Reaches(int count)
        {
            lock (gate)
            {
                var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                if (Ids.Count >= count) done.SetResult();
                else waits.Add((count, done));
                return done.Task;
            }
        }

        public string Joined() { lock (gate) return string.Concat(Ids.Select(i => i + ".")); }
    }

    private static ChangeFeedProcessor Processor(Container monitored, Container leases, Seen seen, string name = "test",
        Func<ChangeFeedProcessorBuilder, ChangeFeedProcessorBuilder>? configure = null)
    {
        ChangeFeedProcessorBuilder b = monitored
            .GetChangeFeedProcessorBuilder<JObject>(name, (ChangeFeedProcessorContext context, IReadOnlyCollection<JObject> docs, CancellationToken _) =>
            {
                seen.Add(context, docs);
                return Task.CompletedTask;
            })
            .Common(leases)
            .WithLeaseAcquireNotification(_ => { seen.Acquired.TrySetResult(); return Task.CompletedTask; });
        return (configure?.Invoke(b) ?? b).Build();
    }

    private static async Task Create(Container c, IEnumerable<string> ids, string? pk = "0")
    {
        foreach (string id in ids)
        {
            var doc = new JObject { ["id"] = id };
            if (pk is not null) doc["pk"] = pk;
            await c.CreateItemAsync(doc);
        }
    }

    private static IEnumerable<string> Range(int from, int count, string prefix = "") => Enumerable.Range(from, count).Select(i => $"{prefix}{i}");

    /// <summary>A new monitored/lease pair and the default processor on it, started, its lease acquired.</summary>
    private static async Task<(Container Monitored, Container Leases, Seen Seen, ChangeFeedProcessor P)> StartedOnNewPair(Database db)
    {
        var (monitored, leases) = await Fixtures.Pair(db);
        var seen = new Seen();
        ChangeFeedProcessor p = Processor(monitored, leases, seen);
        await p.StartAsync();
        await Fixtures.Within(seen.Acquired.Task, "lease acquired");
        return (monitored, leases, seen, p);
    }

    public static async Task Run(CheckRunner run, CosmosClient client, Database db)
    {
        await run.Run("processor: changes written after the lease is acquired arrive in order, each batch's context with lease, session and charge", async () =>
        {
            var (monitored, leases, seen, p) = await StartedOnNewPair(db);
            await Create(monitored, Range(0, 10));
            await Fixtures.Within(seen.Reaches(10), "10 documents delivered");
            await p.StopAsync();
            Expect.Equal("0.1.2.3.4.5.6.7.8.9.", seen.Joined(), "delivered in order, once each");
            Expect.Sequence([], seen.Problems, "context problems");
        });

        await run.Run("processor: documents written right after StartAsync are delivered", async () =>
        {
            var (monitored, leases) = await Fixtures.Pair(db);
            var seen = new Seen();
            ChangeFeedProcessor p = Processor(monitored, leases, seen);
            await p.StartAsync();
            await Create(monitored, Range(0, 10));
            await Fixtures.Within(seen.Reaches(10), "10 documents delivered");
            await p.StopAsync();
            Expect.Equal("0.1.2.3.4.5.6.7.8.9.", seen.Joined(), "none missed, in order");
        });

        await run.Run("processor: 100 documents without a partition key value arrive in order", async () =>
        {
            var (monitored, leases, seen, p) = await StartedOnNewPair(db);
            await Create(monitored, Range(0, 100), pk: null);
            await Fixtures.Within(seen.Reaches(100), "100 documents delivered");
            await p.StopAsync();
            Expect.Sequence(Range(0, 100), seen.Ids, "in creation order");
        });

        await run.Run("processor: manual checkpoint — after a handler error the lease resumes from the last checkpoint", async () =>
        {
            var (monitored, leases) = await Fixtures.Pair(db);
            var seen = new Seen();
            var thrown = new InvalidOperationException("Stop here");
            int processed = 0, acquires = 0, releases = 0;
            var errors = new List<string>();
            ChangeFeedProcessor p = monitored
                .GetChangeFeedProcessorBuilderWithManualCheckpoint<JObject>("test", async (context, docs, checkpointAsync, _) =>
                {
                    seen.Add(context, docs);
                    processed += docs.Count;
                    // Checkpoint after the first document only; throw on the third: the second and third come again.
                    if (processed == 3) throw thrown;
                    if (processed == 1) await checkpointAsync();
                })
                .Common(leases)
                .WithMaxItems(1)
                .WithLeaseAcquireNotification(_ => { Interlocked.Increment(ref acquires); seen.Acquired.TrySetResult(); return Task.CompletedTask; })
                .WithLeaseReleaseNotification(_ => { Interlocked.Increment(ref releases); return Task.CompletedTask; })
                .WithErrorNotification((_, e) =>
                {
                    lock (errors)
                    {
                        if (e is ChangeFeedProcessorUserException user && ReferenceEquals(user.InnerException, thrown) && user.ChangeFeedProcessorContext is not null)
                            errors.Add("user");
                        else errors.Add(CheckRunner.Describe(e));
                    }
                    return Task.CompletedTask;
                })
                .Build();
            await p.StartAsync();
            await Fixtures.Within(seen.Acquired.Task, "lease acquired");
            await Create(monitored, Range(0, 10));
            await Fixtures.Within(seen.Reaches(12), "12 deliveries (two again)");
            await p.StopAsync();
            Expect.Equal("0.1.2.1.2.3.4.5.6.7.8.9.", seen.Joined(), "re-delivered from the checkpoint");
            Expect.True(acquires > 0, "the lease was acquired");
            Expect.True(releases > 0, "the lease was released");
            Expect.Sequence(["user"], errors, "one error notification: the handler's exception, with its context");
        });

        await run.Run("processor: a batch whose handler throws is delivered again", async () =>
        {
            var (monitored, leases) = await Fixtures.Pair(db);
            var seen = new Seen();
            bool thrownOnce = false;
            ChangeFeedProcessor p = monitored
                .GetChangeFeedProcessorBuilder<JObject>("test", (IReadOnlyCollection<JObject> docs, CancellationToken _) =>
                {
                    if (seen.Ids.Count == 1 && !thrownOnce)
                    {
                        thrownOnce = true;
                        throw new InvalidOperationException("Retry batch");
                    }
                    seen.Add(null, docs);
                    return Task.CompletedTask;
                })
                .Common(leases)
                .WithMaxItems(1)
                .WithLeaseAcquireNotification(_ => { seen.Acquired.TrySetResult(); return Task.CompletedTask; })
                .Build();
            await p.StartAsync();
            await Fixtures.Within(seen.Acquired.Task, "lease acquired");
            await Create(monitored, Range(0, 3));
            await Fixtures.Within(seen.Reaches(3), "3 documents handled");
            await p.StopAsync();
            Expect.True(thrownOnce, "the handler threw once");
            Expect.Sequence(Range(0, 3), seen.Ids, "every document once, in order");
        });

        await run.Run("processor: leases carry LeaseToken, no PartitionId and no partitionKey", async () =>
        {
            var (monitored, leases, seen, p) = await StartedOnNewPair(db);
            List<JObject> docs = await Fixtures.All(leases);
            await p.StopAsync();
            List<JObject> leaseDocs = docs.Where(Fixtures.IsLease).ToList();
            Expect.True(leaseDocs.Count > 0, "at least one lease");
            foreach (JObject d in docs) Expect.True(d["partitionKey"] is null, $"{d["id"]}: no partitionKey property");
            foreach (JObject d in leaseDocs)
            {
                Expect.True(d["LeaseToken"] is { Type: JTokenType.String }, $"{d["id"]}: LeaseToken");
                Expect.True(d["PartitionId"] is null, $"{d["id"]}: no PartitionId (V3 schema)");
            }
        });

        await run.Run("processor: V2 leases (PartitionId, no LeaseToken) are resumed and then carry both", async () =>
        {
            var (monitored, leases, seen, p) = await StartedOnNewPair(db);
            await Create(monitored, Range(0, 10));
            await Fixtures.Within(seen.Reaches(10), "first 10 delivered");
            await p.StopAsync();
            foreach (JObject lease in (await Fixtures.All(leases)).Where(Fixtures.IsLease))
            {
                lease["PartitionId"] = lease["LeaseToken"];
                lease.Remove("LeaseToken");
                await leases.UpsertItemAsync(lease);
            }
            await Create(monitored, Range(10, 10));
            await p.StartAsync();
            await Fixtures.Within(seen.Reaches(20), "the next 10 delivered through the V2 leases");
            await p.StopAsync();
            Expect.Sequence(Range(0, 20), seen.Ids, "every document once, in order");
            foreach (JObject lease in (await Fixtures.All(leases)).Where(Fixtures.IsLease))
            {
                Expect.True(lease["LeaseToken"] is { Type: JTokenType.String }, "LeaseToken after the migration");
                Expect.Equal((string?)lease["LeaseToken"], (string?)lease["PartitionId"], "PartitionId kept, equal to LeaseToken");
            }
        });

        await run.Run("processor: WithStartTime(t) delivers only documents written after t", async () =>
        {
            var (monitored, leases) = await Fixtures.Pair(db);
            await Create(monitored, Range(0, 5, "doc"));
            // Timestamps have second granularity (If-Modified-Since is an HTTP date): a clear second either side.
            await Task.Delay(1500);
            DateTime start = DateTime.UtcNow;
            await Task.Delay(1500);
            await Create(monitored, Range(5, 5, "doc"));
            var seen = new Seen();
            ChangeFeedProcessor p = Processor(monitored, leases, seen, configure: b => b.WithStartTime(start));
            await p.StartAsync();
            await Fixtures.Within(seen.Reaches(5), "5 documents delivered");
            await p.StopAsync();
            Expect.Equal("doc5.doc6.doc7.doc8.doc9.", seen.Joined(), "only the later documents");
        });

        await run.Run("processor: WithStartTime(DateTime.MinValue) reads from the beginning", async () =>
        {
            var (monitored, leases) = await Fixtures.Pair(db);
            await Create(monitored, Range(0, 5, "doc"));
            var seen = new Seen();
            ChangeFeedProcessor p = Processor(monitored, leases, seen, configure: b => b.WithStartTime(DateTime.MinValue.ToUniversalTime()));
            await p.StartAsync();
            await Fixtures.Within(seen.Reaches(5), "5 documents delivered");
            await p.StopAsync();
            Expect.Equal("doc0.doc1.doc2.doc3.doc4.", seen.Joined(), "the earlier documents, in order");
        });

        await run.Run("processor: StartAsync with a missing lease container is a 404", async () =>
        {
            var (monitored, _) = await Fixtures.Pair(db);
            ChangeFeedProcessor p = Processor(monitored, client.GetContainer(db.Id, "NonExistent"), new Seen());
            await Expect.Status(HttpStatusCode.NotFound, () => p.StartAsync(), "StartAsync");
        });
    }
}
