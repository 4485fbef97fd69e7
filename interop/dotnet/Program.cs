using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace CosmosInterop;

/// <summary>
/// Microsoft.Azure.Cosmos (the .NET SDK, Gateway mode) driven by the Node interop tests:
/// <c>CosmosInterop &lt;command&gt; '&lt;config JSON&gt;'</c>; every result is a JSON line on stdout.
/// Commands: <c>account</c> (read the account: a connectivity check), <c>suite</c> (the SDK checks),
/// <c>processor</c> (a Change Feed Processor host until "stop" on stdin or a kill), <c>emulator-tests</c> (the
/// behaviours Microsoft's emulator tests assert: Suite/EmulatorTests.cs).
/// </summary>
internal static class Program
{
    public static async Task<int> Main(string[] args)
    {
        if (args.Length < 2)
        {
            Console.Error.WriteLine("usage: CosmosInterop <account|suite|emulator-tests|processor> '<config JSON>'");
            return 2;
        }
        JObject config = JObject.Parse(args[1]);
        try
        {
            switch (args[0])
            {
                case "account":
                    {
                        using var client = Clients.Create(config.ToObject<ClientConfig>()!);
                        var account = await client.ReadAccountAsync();
                        Output.Line(new { ev = "account", id = account.Id, consistency = account.Consistency.DefaultConsistencyLevel.ToString() });
                        return 0;
                    }
                case "processor":
                    return await ProcessorHost.Run(config.ToObject<ClientConfig>()!, config.ToObject<ProcessorConfig>()!);
                case "estimator": return await Estimator.Run(config);
                case "query":
                    return await RunQuery(config);
                case "suite":
                    return await RunSuite(config);
                case "binary-vectors" or "binary-checks": return await BinaryChecks.Dispatch(args[0], config);
                case "emulator-tests":
                    return await Suite.EmulatorTests.Run(config);
                default:
                    Console.Error.WriteLine($"unknown command '{args[0]}'");
                    return 2;
            }
        }
        catch (Exception e)
        {
            Output.Line(new { ev = "fatal", error = e.ToString() });
            return 1;
        }
    }

    /// <summary>
    /// One query, page by page, each page a line with its items and continuation (for investigating a failed check):
    /// <c>{database, container, query, pageSize, continuation?, resume?}</c>; with <c>resume</c> each page is read by a new
    /// iterator from the previous page's continuation, as an application resuming later would.
    /// </summary>
    private static async Task<int> RunQuery(JObject config)
    {
        using CosmosClient client = Clients.Create(config.ToObject<ClientConfig>()!);
        Container c = client.GetContainer((string)config["database"]!, (string)config["container"]!);
        string query = (string)config["query"]!;
        var options = new QueryRequestOptions { MaxItemCount = (int?)config["pageSize"] ?? 10 };
        bool resume = (bool?)config["resume"] ?? false;
        string? token = (string?)config["continuation"];
        FeedIterator<JToken>? it = null;
        for (int pages = 0; pages < 1000; pages++)
        {
            if (it is null || resume)
            {
                it?.Dispose();
                it = c.GetItemQueryIterator<JToken>(query, token, options);
            }
            if (!it.HasMoreResults) break;
            FeedResponse<JToken> page = await it.ReadNextAsync();
            token = page.ContinuationToken;
            Output.Line(new { ev = "page", items = page.ToList(), continuation = token });
            if (resume && token is null) break;
        }
        it?.Dispose();
        return 0;
    }

    /// <summary>Every SDK check against a fresh set of databases named after <c>prefix</c>; exit 0 when all passed.</summary>
    private static async Task<int> RunSuite(JObject config)
    {
        var clientConfig = config.ToObject<ClientConfig>()!;
        string prefix = (string?)config["prefix"] ?? $"dotnet-{Guid.NewGuid():N}"[..16];
        using CosmosClient client = Clients.Create(clientConfig);
        var run = new Suite.CheckRunner();
        await Suite.ResourceChecks.Run(run, client, prefix);
        await Suite.ItemChecks.Run(run, client, clientConfig, prefix);
        await Suite.QueryChecks.Run(run, client, prefix);
        await Suite.FeedChecks.Run(run, client, prefix);
        await client.GetDatabase($"{prefix}-main").DeleteStreamAsync();
        Output.Line(new { ev = "summary", passed = run.Passed, failed = run.Failed });
        return run.Failed == 0 ? 0 : 1;
    }
}
