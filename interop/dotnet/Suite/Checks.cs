using System.Diagnostics;
using System.Net;
using Microsoft.Azure.Cosmos;

namespace CosmosInterop.Suite;

/// <summary>A check's expectation that did not hold (the message says what was expected and what came).</summary>
internal sealed class CheckFailed(string message) : Exception(message);

/// <summary>
/// Runs named checks one after another; each prints <c>{"ev":"check","name","ok","error"?,"ms"}</c>. A check that
/// throws fails with the exception's type, status and message (a CosmosException's status, substatus and the
/// emulator's message are what the tests show).
/// </summary>
internal sealed class CheckRunner
{
    public int Passed { get; private set; }
    public int Failed { get; private set; }

    public async Task Run(string name, Func<Task> check)
    {
        var watch = Stopwatch.StartNew();
        try
        {
            await check();
            Passed++;
            Output.Line(new { ev = "check", name, ok = true, ms = watch.ElapsedMilliseconds });
        }
        catch (Exception e)
        {
            Failed++;
            Output.Line(new { ev = "check", name, ok = false, error = Describe(e), ms = watch.ElapsedMilliseconds });
        }
    }

    public static string Describe(Exception e) => e switch
    {
        CosmosException c => $"CosmosException {(int)c.StatusCode}/{c.SubStatusCode}: {FirstLines(c.ResponseBody ?? c.Message)}",
        CheckFailed f => f.Message,
        _ => $"{e.GetType().Name}: {FirstLines(e.Message)} @ {FirstLines(e.StackTrace ?? "", 4)}",
    };

    private static string FirstLines(string text, int lines = 3) =>
        string.Join(" | ", text.Split('\n').Take(lines).Select(l => l.Trim()));
}

internal static class Expect
{
    public static void Equal<T>(T expected, T actual, string what)
    {
        if (!EqualityComparer<T>.Default.Equals(expected, actual))
            throw new CheckFailed($"{what}: expected {expected}, got {actual}");
    }

    public static void True(bool condition, string what)
    {
        if (!condition) throw new CheckFailed(what);
    }

    public static void Sequence<T>(IEnumerable<T> expected, IEnumerable<T> actual, string what)
    {
        var e = expected.ToList();
        var a = actual.ToList();
        if (!e.SequenceEqual(a))
            throw new CheckFailed($"{what}: expected [{string.Join(",", e)}], got [{string.Join(",", a)}]");
    }

    /// <summary>The operation must fail with this status (a CosmosException); anything else fails the check.</summary>
    public static async Task<CosmosException> Status(HttpStatusCode status, Func<Task> operation, string what)
    {
        try
        {
            await operation();
        }
        catch (CosmosException e) when (e.StatusCode == status)
        {
            return e;
        }
        catch (CosmosException e)
        {
            throw new CheckFailed($"{what}: expected {(int)status}, got {(int)e.StatusCode}/{e.SubStatusCode}: {e.Message.Split('\n')[0]}");
        }
        throw new CheckFailed($"{what}: expected {(int)status}, but it succeeded");
    }
}
