The city council of Lindholm voted on Monday to keep the Northgate Public Library open after a campaign led by retired teacher Agnes Holmqvist gathered twelve thousand signatures. Council leader Peter Dahl said the library would receive new funding next spring.

Holmqvist told reporters that the campaign had brought together readers of every age.

The Northgate Public Library first opened its doors in 1911.

@highlight

Lindholm council votes to keep Northgate Public Library open