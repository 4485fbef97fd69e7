using System.Net;
using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace CosmosInterop.Suite;

/// <summary>
/// The change feed pull model as Microsoft's FeedToken/ChangeFeedIteratorCoreTests.cs and CosmosItemTests.cs assert it:
/// continuations across ranges, start times, an empty beginning, page sizes, breadth-first range order, foreign and
/// malformed continuations, what latest version hides, and the all-versions wire format by partition key.
/// </summary>
internal static class FeedIteratorChecks
{
    /// <summary>Several ranges (what Microsoft's "large container", 20 000 RU/s, is for).</summary>
    private static async Task<Container> Large(Database db) =>
        await db.CreateContainerAsync(new ContainerProperties($"cf-{Guid.NewGuid():N}"[..13], "/pk"), 20_000);

    private static async Task<Container> Small(Database db, Action<ContainerProperties>? configure = null)
    {
        var p = new ContainerProperties($"cf-{Guid.NewGuid():N}"[..13], "/pk");
        configure?.Invoke(p);
        return await db.CreateContainerAsync(p);
    }

    private static async Task<List<JObject>> CreateRandom(Container c, int count)
    {
        var docs = new List<JObject>();
        for (int i = 0; i < count; i++)
        {
            var d = new JObject { ["id"] = Guid.NewGuid().ToString(), ["pk"] = Guid.NewGuid().ToString() };
            await c.CreateItemAsync(d);
            docs.Add(d);
        }
        return docs;
    }

    /// <summary>Reads until the first 304; returns the count read and that 304's continuation.</summary>
    private static async Task<(int Count, string Continuation)> Drain(FeedIterator<JObject> it)
    {
        int count = 0;
        for (int pages = 0; pages < 1000 && it.HasMoreResults; pages++)
        {
            FeedResponse<JObject> page = await it.ReadNextAsync();
            if (page.StatusCode == HttpStatusCode.NotModified) return (count, page.ContinuationToken);
            count += page.Count;
        }
        throw new CheckFailed("the feed never answered 304");
    }

    public static async Task Run(CheckRunner run, Database db)
    {
        await run.Run("change feed: from the beginning over several ranges, then the saved continuation reads only the next 25", async () =>
        {
            Container c = await Large(db);
            Expect.True((await c.GetFeedRangesAsync()).Count > 1, "several ranges");
            await CreateRandom(c, 25);
            var (first, continuation) = await Drain(c.GetChangeFeedIterator<JObject>(ChangeFeedStartFrom.Beginning(), ChangeFeedMode.LatestVersion));
            Expect.Equal(25, first, "first read");
            await CreateRandom(c, 25);
            var (second, _) = await Drain(c.GetChangeFeedIterator<JObject>(ChangeFeedStartFrom.ContinuationToken(continuation), ChangeFeedMode.LatestVersion));
            Expect.Equal(25, second, "from the continuation");
        });

        await run.Run("change feed: ChangeFeedStartFrom.Time reads only documents written after that time", async () =>
        {
            Container c = await Small(db);
            await CreateRandom(c, 25);
            // A clear second either side of the start (the service's time granularity).
            await Task.Delay(1500);
            DateTime start = DateTime.UtcNow;
            await Task.Delay(1500);
            await CreateRandom(c, 25);
            var (count, _) = await Drain(c.GetChangeFeedIterator<JObject>(ChangeFeedStartFrom.Time(start), ChangeFeedMode.LatestVersion));
            Expect.Equal(25, count, "documents after the start time");
        });

        await run.Run("change feed: an iterator that began on an empty container picks up later writes", async () =>
        {
            Container c = await Small(db);
            using FeedIterator<JObject> it = c.GetChangeFeedIterator<JObject>(ChangeFeedStartFrom.Beginning(), ChangeFeedMode.LatestVersion);
            FeedResponse<JObject> empty = await it.ReadNextAsync();
            Expect.Equal(HttpStatusCode.NotModified, empty.StatusCode, "nothing yet");
            Expect.True(it.HasMoreResults, "a change feed iterator always has more results");
            await CreateRandom(c, 5);
            var (count, _) = await Drain(it);
            Expect.Equal(5, count, "the later writes");
        });

        await run.Run("change feed: PageSizeHint 1 gives pages of one document", async () =>
        {
            Container c = await Small(db);
            await CreateRandom(c, 3);
            using FeedIterator<JObject> it = c.GetChangeFeedIterator<JObject>(ChangeFeedStartFrom.Beginning(), ChangeFeedMode.LatestVersion,
                new ChangeFeedRequestOptions { PageSizeHint = 1 });
            var sizes = new List<int>();
            while (true)
            {
                FeedResponse<JObject> page = await it.ReadNextAsync();
                if (page.StatusCode == HttpStatusCode.NotModified) break;
                sizes.Add(page.Count);
            }
            Expect.Sequence([1, 1, 1], sizes, "page sizes");
        });

        await run.Run("change feed: a new iterator per page from the last continuation drains every range", async () =>
        {
            Container c = await Large(db);
            int ranges = (await c.GetFeedRangesAsync()).Count;
            await CreateRandom(c, 25);
            string? continuation = null;
            int count = 0;
            for (int iterations = 0; count < 25; iterations++)
            {
                if (iterations > ranges) throw new CheckFailed($"after {iterations} reads over {ranges} ranges only {count} of 25");
                using FeedIterator<JObject> it = c.GetChangeFeedIterator<JObject>(
                    continuation is null ? ChangeFeedStartFrom.Beginning() : ChangeFeedStartFrom.ContinuationToken(continuation), ChangeFeedMode.LatestVersion);
                FeedResponse<JObject> page = await it.ReadNextAsync();
                if (page.StatusCode != HttpStatusCode.OK && page.StatusCode != HttpStatusCode.NotModified)
                    throw new CheckFailed($"status {page.StatusCode}");
                count += page.Count;
                continuation = page.ContinuationToken;
            }
            Expect.Equal(25, count, "documents read");
        });

        await run.Run("change feed: breadth first — after a page the continuation's first range is another one", async () =>
        {
            Container c = await Large(db);
            await CreateRandom(c, 100);
            using FeedIterator<JObject> it = c.GetChangeFeedIterator<JObject>(ChangeFeedStartFrom.Beginning(), ChangeFeedMode.LatestVersion,
                new ChangeFeedRequestOptions { PageSizeHint = 1 });
            JToken First(FeedResponse<JObject> page) => JObject.Parse(page.ContinuationToken)["Continuation"]![0]!["FeedRange"]!;
            FeedResponse<JObject> one = await it.ReadNextAsync();
            FeedResponse<JObject> two = await it.ReadNextAsync();
            Expect.Equal(HttpStatusCode.OK, one.StatusCode, "first page");
            Expect.True(!JToken.DeepEquals(First(one), First(two)), $"the range moved: {First(one)} then {First(two)}");
        });

        await run.Run("change feed: a continuation from another container is a 400", async () =>
        {
            Container one = await Small(db);
            Container other = await Small(db);
            IReadOnlyList<FeedRange> ranges = await one.GetFeedRangesAsync();
            using FeedIterator<JObject> it = one.GetChangeFeedIterator<JObject>(ChangeFeedStartFrom.Beginning(ranges[0]), ChangeFeedMode.LatestVersion);
            FeedResponse<JObject> page = await it.ReadNextAsync();
            using FeedIterator<JObject> foreign = other.GetChangeFeedIterator<JObject>(ChangeFeedStartFrom.ContinuationToken(page.ContinuationToken), ChangeFeedMode.LatestVersion);
            await Expect.Status(HttpStatusCode.BadRequest, () => foreign.ReadNextAsync(), "the other container's continuation");
        });

        await run.Run("change feed: a malformed continuation is a 400 with a substatus", async () =>
        {
            Container c = await Small(db);
            using FeedIterator<JObject> it = c.GetChangeFeedIterator<JObject>(ChangeFeedStartFrom.ContinuationToken("AMalformedContinuationToken"),
                ChangeFeedMode.LatestVersion, new ChangeFeedRequestOptions { PageSizeHint = 100 });
            CosmosException e = await Expect.Status(HttpStatusCode.BadRequest, () => it.ReadNextAsync(), "a malformed continuation");
            Expect.True(e.SubStatusCode != 0, "a malformed-continuation substatus");
        });

        await run.Run("change feed: latest version shows nothing of documents created then deleted (304)", async () =>
        {
            Container c = await Small(db, p => p.ChangeFeedPolicy.FullFidelityRetention = TimeSpan.FromMinutes(5));
            foreach (JObject d in await CreateRandom(c, 50)) await c.DeleteItemAsync<JObject>((string)d["id"]!, new PartitionKey((string)d["pk"]!));
            using FeedIterator<JObject> it = c.GetChangeFeedIterator<JObject>(ChangeFeedStartFrom.Beginning(), ChangeFeedMode.LatestVersion);
            FeedResponse<JObject> page = await it.ReadNextAsync();
            Expect.Equal(HttpStatusCode.NotModified, page.StatusCode, "first page");
        });

        await run.Run("change feed: all versions and deletes from the beginning is a 400", async () =>
        {
            Container c = await Small(db, p => p.ChangeFeedPolicy.FullFidelityRetention = TimeSpan.FromMinutes(5));
            await CreateRandom(c, 10);
            using FeedIterator<ChangeFeedItem<JObject>> it = c.GetChangeFeedIterator<ChangeFeedItem<JObject>>(ChangeFeedStartFrom.Beginning(), ChangeFeedMode.AllVersionsAndDeletes);
            await Expect.Status(HttpStatusCode.BadRequest, () => it.ReadNextAsync(), "AVAD from the beginning");
        });

        await run.Run("change feed: all versions and deletes by partition key from now — create then replace, other keys left out", async () =>
        {
            Container c = await Small(db, Fixtures.AllVersions);
            string id = Guid.NewGuid().ToString(), otherId = Guid.NewGuid().ToString();
            using FeedIterator<ChangeFeedItem<JObject>> it = c.GetChangeFeedIterator<ChangeFeedItem<JObject>>(
                ChangeFeedStartFrom.Now(FeedRange.FromPartitionKey(new PartitionKey(id))), ChangeFeedMode.AllVersionsAndDeletes);
            FeedResponse<ChangeFeedItem<JObject>> first = await it.ReadNextAsync();
            Expect.Equal(HttpStatusCode.NotModified, first.StatusCode, "nothing yet");
            Expect.True(first.ContinuationToken is { Length: > 0 }, "a 304 has a continuation");
            await c.UpsertItemAsync(new JObject { ["id"] = otherId, ["pk"] = otherId, ["City"] = "Bangkok" }, new PartitionKey(otherId));
            await c.UpsertItemAsync(new JObject { ["id"] = id, ["pk"] = id, ["City"] = "Redmond" }, new PartitionKey(id));
            await c.UpsertItemAsync(new JObject { ["id"] = id, ["pk"] = id, ["City"] = "Atlanta" }, new PartitionKey(id));
            var items = new List<ChangeFeedItem<JObject>>();
            for (int pages = 0; pages < 20 && items.Count < 2; pages++) items.AddRange(await it.ReadNextAsync());
            Expect.Sequence([ChangeFeedOperationType.Create, ChangeFeedOperationType.Replace], items.Select(i => i.Metadata.OperationType), "operations of that key only");
            Expect.Sequence(["Redmond", "Atlanta"], items.Select(i => (string?)i.Current["City"]), "current images");
            Expect.True(items.All(i => i.Metadata.ConflictResolutionTimestamp != default && i.Metadata.Lsn != 0 && !i.Metadata.IsTimeToLiveExpired), "crts, lsn, not expired");
            Expect.Equal(0L, items[0].Metadata.PreviousLsn, "the create's previousImageLSN");
            Expect.Equal(items[0].Metadata.Lsn, items[1].Metadata.PreviousLsn, "the replace's previousImageLSN");
        });
    }
}
