(CNN)Real Monteverde have broken their transfer record to sign Venezuela striker Yorman Castillo, the Spanish club announced on Sunday, ending weeks of speculation about the 23-year-old's future.

Castillo, who scored 19 goals in all competitions for Union Morichal last season, will fly to Spain this week for a medical before signing a five-year contract.

Monteverde coach Inaki Arrieta said the forward's pace and finishing had impressed him when he watched Castillo play for Venezuela against Colombia in Barranquilla.

"He is hungry, he is humble, and he scores the kind of goals you simply cannot teach or coach," Arrieta told reporters in Madrid.

Monteverde's supporters greeted the news with a flurry of celebratory posts online. Venezuelans have followed Castillo closely ever since his debut for the national team.

Arrieta refused to reveal the fee. Can Castillo adapt quickly enough to the physical demands of football in Spain?

Strikers who arrive from abroad often struggle with the language and the weather. Arrieta said Castillo will fly to Spain this week for tests.

Agent Mauricio Pellegrini said clubs in Portugal had also made offers for the player. Arrieta believes the Venezuelan can form a lethal partnership with the captain.

Monteverde will unveil Castillo to supporters at their training ground outside Madrid.

@highlight

Real Monteverde sign Yorman Castillo in a club-record deal

@highlight

The Venezuela striker scored 19 goals last season

@highlight

Coach Inaki Arrieta praises the forward's pace and finishing